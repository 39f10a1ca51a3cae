// Two claims load and dispatch at once in one process. The same event can reach both only when a lease expired
// while the first claim was still loading (PostgreSQL stalled past the lease) and the second claim took it back. Each
// dispatch then waits for its rows and its destinations before starting anything, so the check for an event
// already started is made again after those waits, when nothing can come in between it and the start. An event whose
// attempt has ended counts as held until its outcome is written: PostgreSQL shows its old attempt count until then.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { enqueueTransfers, sendsPerWebhookId, startDeliveryBed, type DeliveryBed } from "../../support/delivery.ts";
import { until } from "../../support/wait.ts";

let bed: DeliveryBed;

beforeAll(async () => {
  // No claim loop: the test hands the claimed ids to the dispatch itself.
  bed = await startDeliveryBed({ delivererDeps: { startWorker: false } });
}, 60_000);

afterAll(async () => {
  await bed?.stop();
}, 60_000);

interface Dispatcher {
  dispatch(ids: string[], claimedAt: number): Promise<number>;
  targets: { get(subscriptionIds: string[]): Promise<unknown> };
}

/** Three events of a new subscription to `path`, claimed; the worker as the test drives it. */
async function claimThree(path: string) {
  const sub = await bed.subscribe(path);
  const { ids } = await enqueueTransfers(bed, sub.subscriptionId, 3, 0);
  const now = Date.now();
  const worker = bed.deliverer!.worker;
  const claim = await bed.deliverer!.schedule.claim(now, now + worker.leaseMs, 10);
  expect(claim.ids.sort()).toEqual([...ids].sort());
  // The worker's claim loop (deliverer/worker/claims.ts) and the target cache it reads.
  const loop = (worker as unknown as { claims: { dispatch: Dispatcher["dispatch"]; d: Pick<Dispatcher, "targets"> } }).claims;
  return { sub, claim, now, dispatcher: { dispatch: loop.dispatch.bind(loop), targets: loop.d.targets } };
}

/** Both dispatches of the claim at once, until the three events are delivered. */
async function dispatchTwice(subscriptionId: string, dispatcher: Dispatcher, ids: string[], claimedAt: number): Promise<void> {
  await Promise.all([dispatcher.dispatch(ids, claimedAt), dispatcher.dispatch(ids, claimedAt)]);
  await until("all three delivered", async () => {
    const [row] = (await bed.sql`SELECT count(*)::int AS n FROM event_deliveries WHERE subscription_id = ${subscriptionId} AND status = 'delivered'`) as [{ n: number }];
    return row.n === 3;
  }, 10_000);
}

/** How many times the receiver got each event at `path`, a moment after the last delivery. */
async function sendsPerEvent(path: string): Promise<number[]> {
  await Bun.sleep(200);
  return sendsPerWebhookId(bed.receiver.deliveries(path));
}

test("an event handed to two dispatches at once is sent once and recorded once", async () => {
  const { sub, claim, now, dispatcher } = await claimThree("/twice");

  // A registry slow to answer for the destination: both dispatches have their rows and wait for it before either
  // starts an attempt.
  const lookup = dispatcher.targets.get.bind(dispatcher.targets);
  dispatcher.targets.get = async (subscriptionIds) => {
    const found = await lookup(subscriptionIds);
    await Bun.sleep(100);
    return found;
  };
  try {
    await dispatchTwice(sub.subscriptionId, dispatcher, claim.ids, now);
  } finally {
    dispatcher.targets.get = lookup;
  }
  expect(await sendsPerEvent("/twice")).toEqual([1, 1, 1]);
  const attempts = (await bed.sql`SELECT event_id, count(*)::int AS n FROM delivery_attempts WHERE subscription_id = ${sub.subscriptionId} GROUP BY event_id`) as { n: number }[];
  expect(attempts.map((a) => a.n)).toEqual([1, 1, 1]);
  const states = (await bed.sql`SELECT attempts, delivery_count FROM event_deliveries WHERE subscription_id = ${sub.subscriptionId}`) as { attempts: number; delivery_count: number }[];
  expect(states.every((s) => s.attempts === 1 && s.delivery_count === 1)).toBe(true);
  expect((await bed.deliverer!.schedule.stats()).leased).toBe(0);
}, 30_000);

test("an event whose attempt ended and whose outcome is still being written is not sent again by a second dispatch", async () => {
  const { sub, claim, now, dispatcher } = await claimThree("/unrecorded");

  // PostgreSQL slow to take the outcomes: the first dispatch's attempts end and wait for their write while the second
  // dispatch, later to get its destinations, checks the same events. Its rows still say 0 attempts.
  const store = bed.deliverer!.store;
  const record = store.recordOutcomes.bind(store);
  store.recordOutcomes = async (outcomes) => {
    await Bun.sleep(600);
    return record(outcomes);
  };
  const lookup = dispatcher.targets.get.bind(dispatcher.targets);
  let calls = 0;
  dispatcher.targets.get = async (subscriptionIds) => {
    const found = await lookup(subscriptionIds);
    if (calls++ > 0) await Bun.sleep(300);
    return found;
  };
  try {
    await dispatchTwice(sub.subscriptionId, dispatcher, claim.ids, now);
  } finally {
    store.recordOutcomes = record;
    dispatcher.targets.get = lookup;
  }
  expect(await sendsPerEvent("/unrecorded")).toEqual([1, 1, 1]);
  expect((await bed.deliverer!.schedule.stats()).leased).toBe(0);
}, 30_000);
