// Retention keeps every event that is not final (deliverer/partitions.ts): an expired day goes, but its pending events
// (being retried, held for a disabled subscription or a revoked key, retried or recovered by a user) stay, with their
// attempts, identity and search refs, until they are final. Partition upkeep never stalls the events' writes: a drop
// that cannot have its lock at once gives up and is retried; a day written before its partition existed (rows in the
// default partition) is made with those rows moved in; a deliverer makes today's partitions before it serves. Real
// stack (gateway, registry, deliverer), PostgreSQL and Redis; a short retention (EVENT_RETENTION_DAYS=2) and
// back-dated events.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { ulid } from "ulid";
import { hexToBase58 } from "../../common/tron-address.ts";
import { inProcessTransport } from "../../common/rpc.ts";
import { createDeliverer } from "../../deliverer/index.ts";
import { PARTITIONED_TABLES } from "../../deliverer/partitions.ts";
import { call, startEventsStack, type EventsStack } from "../support/events.ts";
import { until } from "../support/wait.ts";

const FROM = hexToBase58(`41${"b1".repeat(20)}`);
const TO = hexToBase58(`41${"b2".repeat(20)}`);
const DAY = 86_400_000;

let env: EventsStack;
let base: string;
let db: SQL;

beforeAll(async () => {
  // No worker: the events stay as written; retention runs when a test calls it.
  env = await startEventsStack({ deliverer: { startWorker: false, purge: { intervalMs: 3_600_000 } }, env: { EVENT_RETENTION_DAYS: "2" } });
  base = env.stack.baseUrl;
  db = new SQL(env.stack.database.url, { max: 4 });
}, 60_000);

afterAll(async () => {
  await db?.close();
  await env?.stop();
}, 60_000);

async function subscription() {
  const k = await env.stack.createKey();
  const res = await call<{ id: string }>(base, k.key, "POST", "/v1/subscriptions", {
    destination: { type: "https", url: env.receiver.url("/retention") },
    events: ["wallet.transfer.broadcasted"],
  });
  expect(res.status).toBe(201);
  return { key: k.key, keyId: k.id, id: res.body.id };
}

interface Stored {
  id: string;
  at: number;
  tx: string;
}

/** One stored event as the deliverer writes it (state, identity, address and txId refs, one attempt). */
async function store(sub: { id: string; keyId: string }, at: number, status: string, held = false): Promise<Stored> {
  const e = { id: `evt_${ulid(at)}`, at, tx: crypto.randomUUID().replaceAll("-", "").repeat(2) };
  const t = new Date(at);
  await db`WITH e AS (INSERT INTO events (id, subscription_id, key_id, addresses, kind, chain_id, tx_id, log_index, payload, created_at)
      VALUES (${e.id}, ${sub.id}, ${sub.keyId}, ARRAY[${FROM}::text, ${TO}::text], 'wallet.transfer.broadcasted', 'tron:mainnet', ${e.tx}, -1,
        ${JSON.stringify({ id: e.id, kind: "wallet.transfer.broadcasted", data: {} })}, ${t})),
    d AS (INSERT INTO event_deliveries (event_id, created_at, subscription_id, key_id, status, attempts, next_attempt_at, held, updated_at)
      VALUES (${e.id}, ${t}, ${sub.id}, ${sub.keyId}, ${status}, 1, ${status === "pending" ? new Date(Date.now() + 3_600_000) : null}, ${held}, ${t})),
    k AS (INSERT INTO event_transfer_keys (subscription_id, kind, chain_id, tx_id, log_index, internal_index, event_id, event_created_at)
      VALUES (${sub.id}, 'wallet.transfer.broadcasted', 'tron:mainnet', ${e.tx}, -1, -1, ${e.id}, ${t})),
    a AS (INSERT INTO event_addresses (key_id, address, created_at, event_id) VALUES (${sub.keyId}, ${FROM}, ${t}, ${e.id}), (${sub.keyId}, ${TO}, ${t}, ${e.id})),
    r AS (INSERT INTO event_tx_refs (key_id, tx_id, created_at, event_id) VALUES (${sub.keyId}, ${e.tx}, ${t}, ${e.id}))
    INSERT INTO delivery_attempts (id, event_id, event_created_at, subscription_id, attempted_at, duration_ms, ok, response_status, trigger)
      VALUES (${`att_${ulid(at)}`}, ${e.id}, ${t}, ${sub.id}, ${t}, 5, false, 500, 'automatic')`;
  return e;
}

/** How many rows each table holds for an event. */
async function rows(e: Stored): Promise<Record<string, number>> {
  const [r] = (await db`SELECT
      (SELECT count(*) FROM events WHERE id = ${e.id})::int AS events,
      (SELECT count(*) FROM event_deliveries WHERE event_id = ${e.id})::int AS deliveries,
      (SELECT count(*) FROM delivery_attempts WHERE event_id = ${e.id})::int AS attempts,
      (SELECT count(*) FROM event_transfer_keys WHERE event_id = ${e.id})::int AS keys,
      (SELECT count(*) FROM event_addresses WHERE event_id = ${e.id})::int AS addresses,
      (SELECT count(*) FROM event_tx_refs WHERE event_id = ${e.id})::int AS txrefs`) as Record<string, number>[];
  return r!;
}
const ALL = { events: 1, deliveries: 1, attempts: 1, keys: 1, addresses: 2, txrefs: 1 };
const NONE = { events: 0, deliveries: 0, attempts: 0, keys: 0, addresses: 0, txrefs: 0 };

const dayName = (t: number) => new Date(t).toISOString().slice(0, 10).replaceAll("-", "");

describe("retention keeps what is not final", () => {
  test("an expired day goes, but its pending, held and just-retried events stay until final, with their attempts and refs", async () => {
    const deliverer = env.stack.deliverer!;
    const sub = await subscription();
    const now = Date.now();
    const old = now - 4 * DAY;
    await deliverer.partitions.ensure(new Date(now - 5 * DAY), new Date(now));
    const delivered = await store(sub, old, "delivered");
    const failed = await store(sub, old + 1_000, "failed");
    const retrying = await store(sub, old + 2_000, "pending");
    const held = await store(sub, old + 3_000, "pending", true);
    const retried = await store(sub, old + 4_000, "failed");
    // A user retries the failed event (pending again, a manual cycle) just before retention runs.
    const retry = await call<{ status: string }>(base, sub.key, "POST", `/v1/subscriptions/${sub.id}/events/${retried.id}/retry`);
    expect([retry.status, retry.body.status]).toEqual([200, "pending"]);
    const recent = await store(sub, now - 60_000, "delivered");

    const dropped = await deliverer.partitions.dropExpired(now);
    for (const table of ["events", "event_deliveries", "delivery_attempts"]) expect(dropped).toContain(`${table}_p${dayName(old)}`);
    const [{ n }] = (await db`SELECT count(*)::int AS n FROM pg_class WHERE relname = ${`events_p${dayName(old)}`}`) as [{ n: number }];
    expect(n).toBe(0);
    // The final events of the day are gone; the others are all there, as they were.
    expect(await rows(delivered)).toEqual(NONE);
    expect(await rows(failed)).toEqual(NONE);
    for (const e of [retrying, held, retried, recent]) expect([e.id, await rows(e)]).toEqual([e.id, ALL]);
    const states = (await db`SELECT event_id, status, held, trigger FROM event_deliveries WHERE event_id IN ${db([retrying.id, held.id, retried.id])} ORDER BY event_id`) as {
      event_id: string; status: string; held: boolean; trigger: string;
    }[];
    expect(states.map((s) => [s.event_id, s.status, s.held, s.trigger])).toEqual([
      [retrying.id, "pending", false, "automatic"],
      [held.id, "pending", true, "automatic"],
      [retried.id, "pending", false, "manual"],
    ]);
    // The API and the worker still find them: by id, in the lists, and as a claim would load them.
    for (const e of [retrying, held, retried]) {
      expect((await call(base, sub.key, "GET", `/v1/subscriptions/${sub.id}/events/${e.id}`)).status).toBe(200);
      const byTx = await call<{ items: { id: string }[] }>(base, sub.key, "GET", `/v1/events?txId=${e.tx}`);
      expect(byTx.body.items.map((x) => x.id)).toEqual([e.id]);
    }
    const claimed = await deliverer.store.loadClaimed([retrying.id, retried.id]);
    expect(claimed.map((c) => c.id).sort()).toEqual([retrying.id, retried.id].sort());

    // A second pass keeps them while they are pending; once one is final, the next pass takes it.
    await deliverer.partitions.dropExpired(now);
    for (const e of [retrying, held, retried]) expect(await rows(e)).toEqual(ALL);
    await db`UPDATE event_deliveries SET status = 'delivered', next_attempt_at = NULL WHERE event_id = ${retrying.id}`;
    await deliverer.partitions.dropExpired(now);
    expect(await rows(retrying)).toEqual(NONE);
    for (const e of [held, retried, recent]) expect(await rows(e)).toEqual(ALL);
  }, 60_000);
});

/** Lock requests of this database still waiting, of the given lock type and mode. */
async function waitingLocks(locktype: string, mode?: string): Promise<number> {
  const [{ n }] = (await db`SELECT count(*)::int AS n FROM pg_locks
    WHERE NOT granted AND locktype = ${locktype} AND (${mode ?? null}::text IS NULL OR mode = ${mode ?? null}::text)
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`) as [{ n: number }];
  return n;
}

async function partitionsOf(day: number): Promise<string[]> {
  const names = PARTITIONED_TABLES.map((t) => `${t}_p${dayName(day)}`);
  return ((await db`SELECT relname FROM pg_class WHERE relname IN ${db(names)} ORDER BY relname`) as { relname: string }[]).map((r) => r.relname);
}

describe("partition upkeep never stalls the events' writes", () => {
  test("a long read on an expired day: retention gives up its lock wait, enqueue and claim go on, a later pass drops the day", async () => {
    const deliverer = env.stack.deliverer!;
    const sub = await subscription();
    const now = Date.now();
    const old = now - 3 * DAY - 7_200_000;
    await deliverer.partitions.ensure(new Date(old), new Date(now));
    const expired = await store(sub, old, "delivered");
    const reader = await db.reserve();
    try {
      // A report reading the expired day, its transaction open: it holds an AccessShareLock on the partition.
      await reader`BEGIN`;
      await reader.unsafe(`SELECT count(*) FROM "events_p${dayName(old)}"`);
      let settled = false;
      const pass = deliverer.partitions.dropExpiredPass(now).finally(() => {
        settled = true;
      });
      await until("retention to wait for the partition's lock", async () => settled || (await waitingLocks("relation", "AccessExclusiveLock")) > 0, 20_000, 5);
      // Enqueue's statement and a claim's load, while the read goes on.
      const id = `evt_${ulid()}`;
      const at = new Date();
      const write = (async () => {
        const out = await deliverer.store.insertTransferEvents([{
          id, subscriptionId: sub.id, keyId: sub.keyId, addresses: [FROM, TO], kind: "wallet.transfer.broadcasted", chainId: "tron:mainnet",
          txId: "ef".repeat(32), logIndex: -1, internalIndex: -1, payload: JSON.stringify({ id }), status: "pending",
          nextAttemptAt: at, createdAt: at, updatedAt: at,
        }]);
        const claimed = await deliverer.store.loadClaimed([id]);
        return [...out.inserted, ...claimed.map((c) => c.id)];
      })();
      // Before the fix the writes queued behind the drop until the read ended: this only detects that hang.
      const outcome = await Promise.race([write, Bun.sleep(20_000).then(() => "blocked behind the partition drop")]);
      expect(outcome).toEqual([id, id]);
      // The pass gave up on the day it could not lock, and says so; the day and its event are still there.
      const first = await pass;
      expect(first.complete).toBe(false);
      expect(await partitionsOf(old)).toContain(`events_p${dayName(old)}`);
    } finally {
      await reader`ROLLBACK`;
      reader.release();
    }
    // The read over, the next pass drops the day.
    const second = await deliverer.partitions.dropExpiredPass(now);
    expect(second.complete).toBe(true);
    expect(await partitionsOf(old)).toEqual([]);
    expect(await rows(expired)).toEqual(NONE);
  }, 90_000);

  test("a day written before its partition existed (default partition): making it moves the rows in, and nothing fails after", async () => {
    const deliverer = env.stack.deliverer!;
    const sub = await subscription();
    // A day past the days made ahead, as after an outage longer than those: its rows land in the default partition.
    const day = Date.now() + 10 * DAY;
    const spilled = [await store(sub, day, "pending"), await store(sub, day + 1_000, "pending", true)];
    const before = (await db`SELECT id, xid::text AS xid, seq, tableoid::regclass::text AS part FROM events WHERE id IN ${db(spilled.map((e) => e.id))} ORDER BY id`) as {
      id: string; xid: string; seq: number; part: string;
    }[];
    expect(before.map((r) => r.part)).toEqual(["events_default", "events_default"]);

    const made = await deliverer.partitions.ensurePass(new Date(day - DAY), new Date(day + DAY));
    expect(made).toEqual({ result: 9, complete: true });
    const after = (await db`SELECT id, xid::text AS xid, seq, tableoid::regclass::text AS part FROM events WHERE id IN ${db(spilled.map((e) => e.id))} ORDER BY id`) as typeof before;
    expect(after).toEqual(before.map((r) => ({ ...r, part: `events_p${dayName(day)}` })));
    const [states] = (await db`SELECT count(*)::int AS n FROM event_deliveries WHERE tableoid = ${`event_deliveries_p${dayName(day)}`}::regclass`) as [{ n: number }];
    const [attempts] = (await db`SELECT count(*)::int AS n FROM delivery_attempts WHERE tableoid = ${`delivery_attempts_p${dayName(day)}`}::regclass`) as [{ n: number }];
    expect([states.n, attempts.n]).toEqual([2, 2]);
    for (const e of spilled) {
      expect(await rows(e)).toEqual(ALL);
      expect((await call(base, sub.key, "GET", `/v1/subscriptions/${sub.id}/events/${e.id}`)).status).toBe(200);
    }
    // The day's writes go to its partition now, and the upkeep passes after it finish.
    const later = await store(sub, day + 2_000, "pending");
    const [{ part }] = (await db`SELECT tableoid::regclass::text AS part FROM events WHERE id = ${later.id}`) as [{ part: string }];
    expect(part).toBe(`events_p${dayName(day)}`);
    expect(await deliverer.partitions.maintain()).toBe(true);
  }, 60_000);

  test("a starting deliverer makes today's and the next days' partitions before it serves", async () => {
    const ahead = Date.now() + 3 * DAY;
    // The last day made ahead is missing, as when the upkeep has not run for days.
    for (const name of await partitionsOf(ahead)) await db.unsafe(`DROP TABLE "${name}"`);
    expect(await partitionsOf(ahead)).toEqual([]);
    const holder = await db.reserve();
    let started = false;
    let second: Promise<Awaited<ReturnType<typeof createDeliverer>>> | undefined;
    try {
      // Another replica's upkeep holds the partitions' lock.
      await holder`SELECT pg_advisory_lock(hashtext('deliverer_partitions'))`;
      second = createDeliverer(env.stack.config, {
        registry: inProcessTransport(env.stack.registry.routes),
        startWorker: false,
        purge: { intervalMs: 3_600_000 },
      });
      void second.then(() => {
        started = true;
      });
      await until("the starting deliverer to wait for the partitions' lock", async () => started || (await waitingLocks("advisory")) > 0, 20_000, 5);
      expect(started).toBe(false);
    } finally {
      await holder`SELECT pg_advisory_unlock(hashtext('deliverer_partitions'))`;
      holder.release();
    }
    const handle = await second!;
    try {
      expect(await partitionsOf(ahead)).toEqual(PARTITIONED_TABLES.map((t) => `${t}_p${dayName(ahead)}`).sort());
    } finally {
      await handle.close();
    }
  }, 60_000);
});
