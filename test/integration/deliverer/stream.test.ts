// StreamEvents as platform services use it: a real gRPC client (@grpc/grpc-js over HTTP/2) and a Connect client
// against the deliverer's served ports, authenticated with the API key in metadata (and nothing else: the method
// is listed in the handle's publicMethods, so no internal token is sent here).
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { serveService, type ServedService } from "../../../common/service.ts";
import {
  DeliveryService,
  StreamEventsRequestSchema,
  StreamEventsResponseSchema,
  type StreamedEvent,
  type StreamEventsRequest,
  type StreamEventsResponse,
} from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ErrorInfoSchema } from "../../../gen/webhooks/common/v1/error_pb.ts";
import { enqueueTransfers, startDeliveryBed, type DeliveryBed } from "../../support/delivery.ts";
import { until } from "../../support/wait.ts";

let bed: DeliveryBed;
let served: ServedService;
let client: grpc.Client;

beforeAll(async () => {
  bed = await startDeliveryBed({ delivererDeps: { stream: { pollMs: 100, batch: 500, messageEvents: 200, authRecheckMs: 300 } } });
  served = await serveService(bed.deliverer!, 0, 0);
  const address = served.grpc!.address();
  if (address === null || typeof address === "string") throw new Error("gRPC server has no TCP address");
  client = new grpc.Client(`127.0.0.1:${address.port}`, grpc.credentials.createInsecure());
}, 60_000);

afterAll(async () => {
  client?.close();
  await served?.stop();
  await bed?.stop();
}, 60_000);

/** A key (its secret too) with one subscription. */
async function keyWithSubscription(): Promise<{ keyId: string; secret: string; subscriptionId: string }> {
  const key = await bed.keys.createApiKey({ name: "stream", chains: [] });
  const sub = await bed.subscriptions.createSubscription({
    keyId: key.key!.id,
    destination: { type: "https", url: bed.receiver.url("/stream") },
    events: ["wallet.transfer.broadcasted", "service.ping"],
    status: "",
    description: "",
  });
  return { keyId: key.key!.id, secret: key.secret, subscriptionId: sub.subscription!.id };
}

interface GrpcStream {
  events: StreamedEvent[];
  /** Events per response message, in arrival order. */
  messages: number[];
  error: grpc.ServiceError | undefined;
  ended: Promise<void>;
  call: grpc.ClientReadableStream<StreamEventsResponse>;
}

function openGrpc(secret: string | undefined, req: MessageInitShape<typeof StreamEventsRequestSchema> = {}): GrpcStream {
  const metadata = new grpc.Metadata();
  if (secret !== undefined) metadata.set("authorization", `Bearer ${secret}`);
  const call = client.makeServerStreamRequest(
    `/${DeliveryService.typeName}/StreamEvents`,
    (m: StreamEventsRequest) => Buffer.from(toBinary(StreamEventsRequestSchema, m)),
    (b: Buffer) => fromBinary(StreamEventsResponseSchema, b),
    create(StreamEventsRequestSchema, req),
    metadata,
  );
  const out: GrpcStream = { events: [], messages: [], error: undefined, ended: Promise.resolve(), call };
  call.on("data", (r: StreamEventsResponse) => {
    out.events.push(...r.events);
    out.messages.push(r.events.length);
  });
  out.ended = new Promise((resolve) => {
    call.on("error", (err: grpc.ServiceError) => {
      out.error = err;
      resolve();
    });
    call.on("end", () => resolve());
  });
  return out;
}

async function closeGrpc(s: GrpcStream): Promise<void> {
  s.call.cancel();
  await s.ended;
}

test("gRPC: a key's events in creation order with cursors; resumes after the last cursor; new events arrive live", async () => {
  const k = await keyWithSubscription();
  const first = await enqueueTransfers(bed, k.subscriptionId, 1200, 0);
  const s1 = openGrpc(k.secret);
  await until("1200 streamed events", async () => s1.events.length >= 1200, 30_000);
  expect(s1.events.map((e) => e.event!.id)).toEqual(first.ids);
  // Pages of 500 go out in messages of at most 200 events.
  expect(Math.max(...s1.messages)).toBeLessThanOrEqual(200);
  expect(s1.messages.length).toBeGreaterThanOrEqual(6);
  const payload = JSON.parse(s1.events[0]!.event!.payloadJson);
  expect(payload.id).toBe(first.ids[0]);
  // Live: made while the stream is open.
  const live = await enqueueTransfers(bed, k.subscriptionId, 5, 5000);
  await until("the live events", async () => s1.events.length >= 1205, 10_000);
  expect(s1.events.slice(1200).map((e) => e.event!.id)).toEqual(live.ids);
  const cursor = s1.events.at(-1)!.cursor;
  await closeGrpc(s1);

  // Disconnected: these are made while nobody listens, then read from the cursor.
  const missed = await enqueueTransfers(bed, k.subscriptionId, 7, 6000);
  const s2 = openGrpc(k.secret, { cursor });
  await until("the missed events", async () => s2.events.length >= 7, 10_000);
  await Bun.sleep(300);
  expect(s2.events.map((e) => e.event!.id)).toEqual(missed.ids);
  await closeGrpc(s2);
});

test("a transaction still running holds later events back (none overtakes its position); they come once it ends", async () => {
  const k = await keyWithSubscription();
  const before = await enqueueTransfers(bed, k.subscriptionId, 3, 7000);
  const s = openGrpc(k.secret);
  await until("the events made before", async () => s.events.length >= 3, 10_000);
  // A transaction with an xid, open while the next events commit: their rows lie beyond the stream's horizon.
  const held = await bed.sql.reserve();
  try {
    await held`BEGIN`;
    await held`SELECT pg_current_xact_id()`;
    const after = await enqueueTransfers(bed, k.subscriptionId, 4, 7100);
    await Bun.sleep(500);
    expect(s.events.map((e) => e.event!.id)).toEqual(before.ids);
    await held`ROLLBACK`;
    await until("the held-back events", async () => s.events.length >= 7, 10_000);
    expect(s.events.map((e) => e.event!.id)).toEqual([...before.ids, ...after.ids]);
  } finally {
    held.release();
    await closeGrpc(s);
  }
});

test("filters by subscription, kind and chain; another key's events never appear", async () => {
  const k = await keyWithSubscription();
  const other = await bed.subscriptions.createSubscription({
    keyId: k.keyId,
    destination: { type: "https", url: bed.receiver.url("/stream2") },
    events: ["wallet.transfer.broadcasted"],
    status: "",
    description: "",
  });
  const stranger = await keyWithSubscription();
  const mine = await enqueueTransfers(bed, k.subscriptionId, 3, 100);
  const theirs = await enqueueTransfers(bed, other.subscription!.id, 2, 200);
  await enqueueTransfers(bed, stranger.subscriptionId, 4, 300);
  const ping = await bed.delivery.createTestEvent({ keyId: k.keyId, subscriptionId: k.subscriptionId, kind: "" });

  const all = openGrpc(k.secret);
  await until("every event of the key", async () => all.events.length >= 6, 10_000);
  await Bun.sleep(300);
  expect(all.events.map((e) => e.event!.id)).toEqual([...mine.ids, ...theirs.ids, ping.event!.id]);
  await closeGrpc(all);

  const bySub = openGrpc(k.secret, { subscriptionIds: [other.subscription!.id] });
  await until("the other subscription's events", async () => bySub.events.length >= 2, 10_000);
  await Bun.sleep(300);
  expect(bySub.events.map((e) => e.event!.id)).toEqual(theirs.ids);
  await closeGrpc(bySub);

  const byKind = openGrpc(k.secret, { kinds: ["service.ping"] });
  await until("the ping", async () => byKind.events.length >= 1, 10_000);
  await Bun.sleep(300);
  expect(byKind.events.map((e) => e.event!.id)).toEqual([ping.event!.id]);
  await closeGrpc(byKind);

  const byChain = openGrpc(k.secret, { chainIds: ["tron:mainnet"] });
  await Bun.sleep(500);
  expect(byChain.events).toEqual([]);
  await closeGrpc(byChain);
});

test("no key, an unknown key or a revoked key is Unauthenticated; a bad cursor is InvalidArgument", async () => {
  for (const secret of [undefined, "whk_" + "A".repeat(43), "nonsense"]) {
    const s = openGrpc(secret);
    await s.ended;
    expect(s.error?.code).toBe(grpc.status.UNAUTHENTICATED);
  }
  const k = await keyWithSubscription();
  const bad = openGrpc(k.secret, { cursor: "not-a-cursor" });
  await bad.ended;
  expect(bad.error?.code).toBe(grpc.status.INVALID_ARGUMENT);

  // Revoked while streaming: the stream ends Unauthenticated at the next check.
  const live = openGrpc(k.secret);
  await Bun.sleep(200);
  await bed.keys.revokeApiKey({ id: k.keyId });
  await live.ended;
  expect(live.error?.code).toBe(grpc.status.UNAUTHENTICATED);
});

test("Connect: the same stream over the deliverer's HTTP port", async () => {
  const k = await keyWithSubscription();
  const made = await enqueueTransfers(bed, k.subscriptionId, 20, 700);
  const connect = createClient(DeliveryService, createConnectTransport({ baseUrl: `http://127.0.0.1:${served.http.port}` }));
  const abort = new AbortController();
  const got: string[] = [];
  try {
    for await (const r of connect.streamEvents({}, { headers: { authorization: `Bearer ${k.secret}` }, signal: abort.signal })) {
      got.push(...r.events.map((e) => e.event!.id));
      if (got.length >= 20) abort.abort();
    }
  } catch (err) {
    if (ConnectError.from(err).code !== Code.Canceled) throw err;
  }
  expect(got).toEqual(made.ids);

  let code: Code | undefined;
  try {
    for await (const _ of connect.streamEvents({}, { headers: { authorization: "Bearer whk_nope" } })) break;
  } catch (err) {
    code = ConnectError.from(err).code;
  }
  expect(code).toBe(Code.Unauthenticated);
});

test("a key holds at most its streams quota open: one more is ResourceExhausted quota_exceeded; a closed one frees its place", async () => {
  const k = await keyWithSubscription();
  await bed.registry.store.setApiKeyQuotas(k.keyId, { streams: 1 });
  const made = await enqueueTransfers(bed, k.subscriptionId, 1, 900);
  const connect = createClient(DeliveryService, createConnectTransport({ baseUrl: `http://127.0.0.1:${served.http.port}` }));
  const headers = { authorization: `Bearer ${k.secret}` };
  /** Reads a stream until aborted; resolves with the error that ended it (undefined: aborted here). */
  const read = (signal: AbortSignal, got: string[]) =>
    (async () => {
      for await (const r of connect.streamEvents({}, { headers, signal })) got.push(...r.events.map((e) => e.event!.id));
      return undefined;
    })().catch((err: unknown) => {
      const ce = ConnectError.from(err);
      return ce.code === Code.Canceled ? undefined : ce;
    });
  const holder = new AbortController();
  const held: string[] = [];
  const holding = read(holder.signal, held);
  await until("the first stream is open", async () => held.length > 0, 10_000);

  const refused = await read(new AbortController().signal, []);
  expect(refused?.code).toBe(Code.ResourceExhausted);
  const [info] = refused!.findDetails(ErrorInfoSchema);
  expect([info?.code, JSON.parse(info?.detailJson || "null")]).toEqual(["quota_exceeded", { quota: "streams", limit: 1 }]);

  holder.abort();
  expect(await holding).toBeUndefined();
  // The place comes back once the server has seen the first stream end (asked again until then).
  const tryOnce = async (): Promise<string[] | null> => {
    const ctl = new AbortController();
    const ids: string[] = [];
    let ended = false;
    const reading = read(ctl.signal, ids).finally(() => {
      ended = true;
    });
    const deadline = Date.now() + 5_000;
    while (ids.length === 0 && !ended && Date.now() < deadline) await Bun.sleep(20);
    ctl.abort();
    await reading;
    return ids.length > 0 ? ids : null;
  };
  expect(await until("a new stream once the first closed", tryOnce, 15_000)).toEqual(made.ids);
});

test("a slow consumer (paused reads while thousands are made) loses nothing and keeps the order", async () => {
  const k = await keyWithSubscription();
  const s = openGrpc(k.secret);
  s.call.pause();
  const made = await enqueueTransfers(bed, k.subscriptionId, 3000, 10_000);
  await Bun.sleep(500);
  s.call.resume();
  await until("3000 events to the slow consumer", async () => s.events.length >= 3000, 60_000);
  expect(s.events.map((e) => e.event!.id)).toEqual(made.ids);
  await closeGrpc(s);
});
