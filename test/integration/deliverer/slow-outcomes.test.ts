// PostgreSQL slow to take outcomes (issue 29, fault 8). An attempt's outcome that waits to be written keeps its
// event's lease alive and counts against what the process may claim, so another replica never takes the event back
// and sends it again, and a stalled process stops claiming instead of sending its whole backlog unrecorded. A claim
// whose rows came back after its lease ended starts nothing. A late outcome of an old delivery cycle never applies
// to a manual retry's new cycle: the retry is sent.
//
// The lease is shortened to 2.5 s (the default is twice the delivery timeout plus 10 s): the outcome writes are held
// back for three leases, as a 45 s stall is against the default's 40 s.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createDeliverer, type DelivererHandle } from "../../../deliverer/index.ts";
import type { Outcome } from "../../../deliverer/db/types.ts";
import { enqueueTransfers, startDeliveryBed, waitForEvent, type DeliveryBed } from "../../support/delivery.ts";
import { until } from "../../support/wait.ts";

const LEASE_MS = 2_500;
const worker = { leaseMs: LEASE_MS, concurrency: 2, prefetch: 2, outcomeBacklog: 6, pollMs: 20 };
// One schedule shard: a claim then hands out no more than it asked for (each shard rounds its share up).
const shards = 1;

let bed: DeliveryBed;
let second: DelivererHandle | undefined;

beforeAll(async () => {
  bed = await startDeliveryBed({ env: { DELIVERY_TIMEOUT_MS: "1000" }, delivererDeps: { worker, shards } });
}, 60_000);

afterAll(async () => {
  await second?.close();
  await bed?.stop();
}, 60_000);

/**
 * Holds back every outcome write of `replicas` until release(); restore() unwraps them. Counts, per replica, the
 * outcomes of attempts started before the release.
 */
function holdOutcomeWrites(replicas: DelivererHandle[]) {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let releasedAt = Infinity;
  const held = new Set<string>();
  const startedWhileHeld = replicas.map(() => 0);
  const originals = replicas.map((r, i) => {
    const record = r.store.recordOutcomes.bind(r.store);
    r.store.recordOutcomes = async (outcomes: Outcome[]) => {
      for (const o of outcomes) {
        held.add(o.id);
        if (o.attempt.at.getTime() < releasedAt) startedWhileHeld[i]!++;
      }
      await gate;
      return record(outcomes);
    };
    return record;
  });
  return {
    held,
    startedWhileHeld,
    release: () => {
      releasedAt = Date.now();
      open();
    },
    restore: () => replicas.forEach((r, i) => (r.store.recordOutcomes = originals[i]!)),
  };
}

// PostgreSQL slow for both replicas, or for one only (its pool stuck) while the other has room to claim.
test.each([["both replicas'", 2], ["one replica's", 1]] as const)(
  "%s outcome writes held back for three leases: no event is sent again by the other replica",
  async (_, stalled) => {
    second = await createDeliverer(bed.config, { registry: bed.registryTransport, worker, shards });
    const replicas = [bed.deliverer!, second];
    const hold = holdOutcomeWrites(replicas.slice(0, stalled));
    const path = `/slow-outcomes-${stalled}`;
    const sub = await bed.subscribe(path);
    try {
      const { ids } = await enqueueTransfers(bed, sub.subscriptionId, 40, 100 * stalled);
      try {
        await until("the first outcome write held back", async () => hold.held.size > 0, 10_000, 10);
        await Bun.sleep(3 * LEASE_MS);
      } finally {
        hold.release();
      }
      await until("every event delivered", async () => {
        const [row] = (await bed.sql`SELECT count(*)::int AS n FROM event_deliveries WHERE subscription_id = ${sub.subscriptionId} AND status = 'delivered'`) as [{ n: number }];
        return row.n === ids.length;
      }, 30_000);
      await Bun.sleep(200);
      // Each send is an attempt recorded: none was a second replica's (its outcome would not apply). (The receiver
      // also counts an attempt that the deliverer timed out on a loaded machine, recorded and retried.)
      const sends = new Map<string, number>();
      for (const d of bed.receiver.deliveries(path)) sends.set(d.headers["webhook-id"]!, (sends.get(d.headers["webhook-id"]!) ?? 0) + 1);
      const attempts = (await bed.sql`SELECT event_id, count(*)::int AS n FROM delivery_attempts WHERE subscription_id = ${sub.subscriptionId} GROUP BY event_id`) as { event_id: string; n: number }[];
      expect(sends.size).toBe(ids.length);
      expect(attempts.filter((a) => sends.get(a.event_id) !== a.n)).toEqual([]);
      expect(attempts.length).toBe(ids.length);
      // While nothing could be written, a stalled replica started no more attempts than it may hold unwritten.
      for (const n of hold.startedWhileHeld) expect(n).toBeLessThanOrEqual(worker.outcomeBacklog);
    } finally {
      hold.restore();
      await second.close();
      second = undefined;
    }
  },
  60_000,
);

test("a claim whose rows arrive after its lease ended starts nothing: the replica that took the event over sends it", async () => {
  const path = "/late-rows";
  const sub = await bed.subscribe(path);
  // The first claim's rows come back from PostgreSQL a lease and more after the claim.
  const store = bed.deliverer!.store;
  const load = store.loadClaimed.bind(store);
  let stalled = 0;
  let returned = false;
  store.loadClaimed = async (ids: string[]) => {
    const rows = await load(ids);
    if (stalled++ === 0) {
      await Bun.sleep(LEASE_MS + 1_000);
      returned = true;
    }
    return rows;
  };
  try {
    const { ids } = await enqueueTransfers(bed, sub.subscriptionId, 1, 1_000);
    await until("the first claim's rows held back", async () => stalled > 0, 10_000, 10);
    second = await createDeliverer(bed.config, { registry: bed.registryTransport, worker, shards });
    await until("the stalled rows returned", async () => returned, 10_000, 20);
    await waitForEvent(bed, { ...sub, eventId: ids[0]! }, (e) => e.status === "delivered", 10_000);
    await Bun.sleep(300);
    expect(bed.receiver.count(path)).toBe(1);
  } finally {
    store.loadClaimed = load;
    await second?.close();
    second = undefined;
  }
}, 30_000);

test("a manual retry racing a late outcome of the cycle before it is sent", async () => {
  const path = "/late-outcome";
  const sub = await bed.subscribe(path);
  const hold = holdOutcomeWrites([bed.deliverer!]);
  let ref: { keyId: string; subscriptionId: string; eventId: string };
  try {
    const created = await bed.delivery.createTestEvent({ ...sub, kind: "" });
    ref = { ...sub, eventId: created.event!.id };
    await until("the attempt's outcome write held back", async () => hold.held.has(ref.eventId), 10_000, 10);
    expect(bed.receiver.count(path)).toBe(1);
    // Meanwhile the event's cycle ended elsewhere (another replica recorded a delivery), and the customer retried it:
    // a new manual cycle, pending with 0 attempts, as the late outcome's write expects to find its own.
    await bed.sql`UPDATE event_deliveries SET status = 'delivered', attempts = 1, delivery_count = 1, response_status = 200,
      next_attempt_at = NULL WHERE event_id = ${ref.eventId}`;
    const retried = await bed.delivery.retryEvent(ref);
    expect(retried.event!.attempts).toBe(0);
    // The retry's entry is claimed (while the old outcome still waits) before the write goes through.
    await until("the retry claimed", async () => (await bed.deliverer!.schedule.stats()).due === 0, 10_000, 10);
  } finally {
    hold.release();
    hold.restore();
  }
  const delivered = await waitForEvent(bed, ref, (e) => e.status === "delivered" && e.deliveryCount === 2, 10_000);
  expect(delivered.attempts).toBe(1);
  expect(bed.receiver.count(path)).toBe(2);
}, 30_000);
