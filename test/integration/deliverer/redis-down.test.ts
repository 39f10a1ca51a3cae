// Redis unreachable: the calls that must schedule answer 503 service_unavailable and change nothing in PostgreSQL;
// reads (the delivery log lives in PostgreSQL) keep working.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { create } from "@bufbuild/protobuf";
import { createClient, type Client } from "@connectrpc/connect";
import { inProcessTransport } from "../../../common/rpc.ts";
import { createDeliverer, type DelivererHandle } from "../../../deliverer/index.ts";
import { DeliveryService, NewEventSchema } from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { sampleTransfer, startDeliveryBed, waitForEvent, type DeliveryBed, rpcOutcome } from "../../support/delivery.ts";

let bed: DeliveryBed;
let cut: DelivererHandle;
let cutClient: Client<typeof DeliveryService>;

beforeAll(async () => {
  bed = await startDeliveryBed();
  // The same database and registry, but a Redis nobody listens on.
  cut = await createDeliverer({ ...bed.config, redisUrl: "redis://127.0.0.1:1/0" }, { registry: bed.registryTransport, startWorker: false });
  cutClient = createClient(DeliveryService, inProcessTransport(cut.routes));
}, 60_000);

afterAll(async () => {
  await cut?.close();
  await bed?.stop();
}, 60_000);


async function count(subscriptionId: string): Promise<number> {
  const [row] = (await bed.sql`SELECT count(*)::int AS n FROM events WHERE subscription_id = ${subscriptionId}`) as [{ n: number }];
  return row.n;
}

test("test events and Enqueue: 503, no event made", async () => {
  const sub = await bed.subscribe("/redis-down");
  expect(await rpcOutcome(cutClient.createTestEvent({ ...sub, kind: "" }))).toBe("service_unavailable");
  expect(
    await rpcOutcome(cutClient.enqueue({ events: [create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind: "wallet.transfer.broadcasted", transfer: sampleTransfer(1) })] })),
  ).toBe("service_unavailable");
  expect(await count(sub.subscriptionId)).toBe(0);
});

test("retry: 503 and the event unchanged; the log stays readable", async () => {
  const sub = await bed.subscribe("/redis-down-retry");
  const made = await bed.delivery.createTestEvent({ ...sub, kind: "" });
  const ref = { ...sub, eventId: made.event!.id };
  await waitForEvent(bed, ref, (e) => e.status === "delivered");
  expect(await rpcOutcome(cutClient.retryEvent(ref))).toBe("service_unavailable");
  const after = (await cutClient.getEvent(ref)).event!;
  expect(after.status).toBe("delivered");
  expect(after.deliveryCount).toBe(1);
  expect((await cutClient.listEvents({ ...sub, limit: 10, status: "", pageToken: "" })).items.length).toBe(1);
});
