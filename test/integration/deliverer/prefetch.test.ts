// The prefetched round: a worker whose attempt slots are all taken still claims and loads the next events (up to
// `prefetch`), starts them as slots free, gives them back to the schedule unattempted when it stops, and releases any
// whose lease could no longer cover an attempt, as the per-destination waiting queue does.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { waitingReleased } from "../../../deliverer/metrics.ts";
import { enqueueTransfers, sendsPerWebhookId, startDeliveryBed, type DeliveryBed } from "../../support/delivery.ts";
import { until } from "../../support/wait.ts";

// Lease = 2 × 1 s + 10 s; an attempt must start within 12 − 1 − 5 = 6 s of its claim.
const env = { DELIVERY_TIMEOUT_MS: "1000", RETRY_SCHEDULE: "0,30s,30s,30s,30s,30s,30s" };
let four: DeliveryBed;
let one: DeliveryBed;
let narrow: DeliveryBed;

beforeAll(async () => {
  four = await startDeliveryBed({ env, delivererDeps: { worker: { concurrency: 4, prefetch: 4 } } });
  // Failed attempts here come back within a second once the destination answers again.
  one = await startDeliveryBed({ env: { ...env, RETRY_SCHEDULE: "0,1s,1s,1s,1s,1s,1s" }, delivererDeps: { worker: { concurrency: 1, prefetch: 8 } } });
  narrow = await startDeliveryBed({ env: { ...env, DELIVERY_TIMEOUT_MS: "5000" }, delivererDeps: { worker: { perHostConcurrency: 4 } } });
}, 60_000);

afterAll(async () => {
  await four?.stop();
  await one?.stop();
  await narrow?.stop();
}, 60_000);

async function states(bed: DeliveryBed, subscriptionId: string): Promise<{ status: string; attempts: number; n: number }[]> {
  return (await bed.sql`SELECT status, attempts, count(*)::int AS n FROM event_deliveries WHERE subscription_id = ${subscriptionId}
    GROUP BY status, attempts ORDER BY status, attempts`) as { status: string; attempts: number; n: number }[];
}

test("with every slot taken, the next round is claimed ahead and starts as the slots free; each event is sent once", async () => {
  const sub = await four.subscribe("/slow");
  four.receiver.setBehaviour("/slow", { kind: "delay", ms: 700 });
  await enqueueTransfers(four, sub.subscriptionId, 12, 0);

  // Four attempts in flight (never more: the process's limit holds) and at least the four of the next round leased
  // beyond them (a claim asks each schedule shard for its share rounded up, so it may lease a few more).
  await until("a round in flight and one claimed ahead", async () => four.receiver.count("/slow") === 4 && (await four.deliverer!.schedule.stats()).leased >= 8, 5_000, 10);
  await Bun.sleep(200);
  expect(four.receiver.count("/slow")).toBe(4);
  expect((await four.deliverer!.schedule.stats()).leased).toBeGreaterThanOrEqual(8);

  await until("all twelve delivered", async () => (await states(four, sub.subscriptionId)).some((s) => s.status === "delivered" && s.n === 12), 20_000);
  expect(sendsPerWebhookId(four.receiver.deliveries("/slow"))).toEqual(Array(12).fill(1));
}, 30_000);

test("prefetched claims whose lease could no longer cover an attempt go back to the schedule; none is lost", async () => {
  const sub = await one.subscribe("/hang");
  one.receiver.setBehaviour("/hang", { kind: "hang" });
  const releasedBefore = (await waitingReleased.get()).values[0]?.value ?? 0;
  // One slot, eight claimed ahead: each attempt runs into the 1 s timeout, so the last of them cannot start within
  // the 6 s their claim allows.
  await enqueueTransfers(one, sub.subscriptionId, 9, 100);
  await until("claims released from the prefetched round", async () => ((await waitingReleased.get()).values[0]?.value ?? 0) > releasedBefore, 15_000);

  one.receiver.setBehaviour("/hang", { kind: "ok" });
  await until("every event delivered", async () => (await states(one, sub.subscriptionId)).every((s) => s.status === "delivered"), 30_000);
  const byState = await states(one, sub.subscriptionId);
  expect(byState.reduce((n, s) => n + s.n, 0)).toBe(9);
}, 60_000);

test("a worker that stops gives its prefetched events back unattempted", async () => {
  const sub = await four.subscribe("/stuck");
  four.receiver.setBehaviour("/stuck", { kind: "hang" });
  await enqueueTransfers(four, sub.subscriptionId, 10, 200);
  await until("a round in flight and one claimed ahead", async () => four.receiver.count("/stuck") === 4 && (await four.deliverer!.schedule.stats()).leased >= 8, 5_000, 10);

  // The attempts in flight are aborted (not attempts either), the prefetched ones never started.
  await four.deliverer!.worker.stop(50);
  const stats = await four.deliverer!.schedule.stats();
  expect(stats.leased).toBe(0);
  expect(stats.due).toBe(10);
  expect(await states(four, sub.subscriptionId)).toEqual([{ status: "pending", attempts: 0, n: 10 }]);
}, 30_000);

test("a destination none of whose attempts has ended yet keeps two rounds of a backlog waiting, none handed back", async () => {
  const sub = await narrow.subscribe("/new");
  narrow.receiver.setBehaviour("/new", { kind: "delay", ms: 1_500 });
  await enqueueTransfers(narrow, sub.subscriptionId, 12, 300);
  // Four attempts (the host's slots) and eight waiting for them: all twelve leased, none back in the schedule.
  await until("the host's slots taken", async () => narrow.receiver.count("/new") === 4, 5_000, 10);
  await Bun.sleep(100);
  expect(await narrow.deliverer!.schedule.stats()).toMatchObject({ leased: 12, due: 0 });
  await until("all twelve delivered", async () => (await states(narrow, sub.subscriptionId)).some((s) => s.status === "delivered" && s.n === 12), 20_000);
  expect(sendsPerWebhookId(narrow.receiver.deliveries("/new"))).toEqual(Array(12).fill(1));
}, 30_000);
