// A real gRPC client (@grpc/grpc-js over HTTP/2, no Connect code on the client side) calls the deliverer's gRPC
// port, as another platform service would: Enqueue, then GetEvent, and an ErrorInfo on a miss.
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as grpc from "@grpc/grpc-js";
import type { DescMessage, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import { fromRpcError } from "../../../common/rpc-errors.ts";
import { serveService, type ServedService } from "../../../common/service.ts";
import {
  DeliveryService,
  EnqueueRequestSchema,
  EnqueueResponseSchema,
  EventResponseSchema,
  GetEventRequestSchema,
} from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { grpcClient, grpcUnary } from "../../support/grpc.ts";
import { sampleTransfer, startDeliveryBed, waitForEvent, type DeliveryBed } from "../../support/delivery.ts";

let bed: DeliveryBed;
let served: ServedService;
let client: grpc.Client;

beforeAll(async () => {
  bed = await startDeliveryBed();
  served = await serveService(bed.deliverer!, 0, 0);
  client = grpcClient(served.grpc!);
}, 60_000);

afterAll(async () => {
  client?.close();
  await served?.stop();
  await bed?.stop();
}, 60_000);

function call<I extends DescMessage, O extends DescMessage>(method: string, input: I, output: O, message: MessageInitShape<I>): Promise<MessageShape<O>> {
  return grpcUnary(client, DeliveryService, method, { input, output }, message, bed.config.internalToken);
}

test("Enqueue and GetEvent over plain gRPC; a miss carries the public error code", async () => {
  const sub = await bed.subscribe("/grpc");
  const res = await call("Enqueue", EnqueueRequestSchema, EnqueueResponseSchema, {
    events: [{ subscriptionId: sub.subscriptionId, kind: "wallet.transfer.broadcasted", transfer: sampleTransfer(7) }],
  });
  expect(res.created).toBe(1);
  const eventId = res.eventIds[0]!;
  await waitForEvent(bed, { ...sub, eventId }, (e) => e.status === "delivered");
  const got = await call("GetEvent", GetEventRequestSchema, EventResponseSchema, { ...sub, eventId });
  expect(got.event!.status).toBe("delivered");
  expect(got.event!.deliveryCount).toBe(1);

  let err: grpc.ServiceError | undefined;
  try {
    await call("GetEvent", GetEventRequestSchema, EventResponseSchema, { ...sub, eventId: "evt_01JZZZZZZZZZZZZZZZZZZZZZZZ" });
  } catch (e) {
    err = e as grpc.ServiceError;
  }
  expect(err?.code).toBe(grpc.status.NOT_FOUND);
  const headers = new Headers();
  headers.set("grpc-status", String(err!.code));
  headers.set("grpc-message", encodeURIComponent(err!.details));
  for (const value of err!.metadata.get("grpc-status-details-bin")) {
    headers.set("grpc-status-details-bin", Buffer.from(value as Buffer).toString("base64"));
  }
  expect(fromRpcError(findTrailerError(headers)).code).toBe("not_found");
});
