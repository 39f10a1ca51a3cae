// The events table partitioned by day (deliverer/partitions.ts, migration 0004): retention drops whole days with
// their attempts, address rows and transfer identities and leaves newer ones intact; lists, page tokens and lookups
// by id answer across partition boundaries; deleting a subscription with many events returns before they are gone
// and they go in the background; the prepared reads map their rows as drizzle would. Real stack (gateway, registry,
// deliverer), PostgreSQL and Redis.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { ulid } from "ulid";
import { and, desc, eq, inArray } from "drizzle-orm";
import { JobRunner } from "../../common/jobs.ts";
import { eventPurgeJob } from "../../deliverer/jobs/event-purge.ts";
import { eventViewColumns } from "../../deliverer/db/event-pages.ts";
import { SEARCH_REFS_PER_REQUEST } from "../../common/event-search.ts";
import { eventDeliveries, events } from "../../deliverer/schema.ts";
import { log } from "../../common/logger.ts";
import { hexToBase58 } from "../../common/tron-address.ts";
import { call, startEventsStack, type EventsStack } from "../support/events.ts";
import { until } from "../support/wait.ts";

// Real base58check addresses: GET /v1/events answers invalid_address to anything else.
const PART_FROM = hexToBase58(`41${"a1".repeat(20)}`);
const PART_TO = hexToBase58(`41${"a2".repeat(20)}`);
const PURGE_A = hexToBase58(`41${"a3".repeat(20)}`);
const EXACT = hexToBase58(`41${"a4".repeat(20)}`);

type Ev = { id: string; subscriptionId: string; date: string };
type Page<T> = { items: T[]; nextPageToken?: string };

const DAY = 86_400_000;
let env: EventsStack;
let base: string;
let db: SQL;

beforeAll(async () => {
  // The worker does not run: the events made here stay as written (no delivery changes their status). The purge
  // runs only when woken (a DELETE wakes it), so a request recorded without a wake-up waits for another purger.
  env = await startEventsStack({
    deliverer: { startWorker: false, purge: { intervalMs: 3_600_000 } },
    env: { EVENT_RETENTION_DAYS: "30" },
  });
  base = env.stack.baseUrl;
  db = new SQL(env.stack.database.url, { max: 2 });
}, 60_000);

afterAll(async () => {
  await db?.close();
  await env?.stop();
}, 60_000);

/** A new subscription, under a new key unless `owner` gives one. */
async function subscription(owner?: { key: string; keyId: string }) {
  let made = owner;
  if (!made) {
    const k = await env.stack.createKey();
    made = { key: k.key, keyId: k.id };
  }
  const { key, keyId } = made;
  const res = await call<{ id: string }>(base, key, "POST", "/v1/subscriptions", {
    destination: { type: "https", url: env.receiver.url("/partitions") },
    events: ["wallet.transfer.broadcasted"],
  });
  expect(res.status).toBe(201);
  return { key, keyId, id: res.body.id };
}

interface Made {
  id: string;
  at: number;
  tx: string;
}

/**
 * Stored events of a subscription at the given times, as the deliverer writes them: the event (id a ULID of its
 * time), its delivery state, its transfer identity, its two address rows, its txId row and one
 * failed attempt. Each has a txId of its own unless `tx` gives them one to share.
 */
async function store(sub: { id: string; keyId: string }, times: number[], status = "failed", tx?: string): Promise<Made[]> {
  const made = times.map((at) => ({ id: `evt_${ulid(at)}`, at, tx: tx ?? crypto.randomUUID().replaceAll("-", "").repeat(2) }));
  // A transfer's log index tells apart the events of a shared transaction.
  const rows = JSON.stringify(made.map((m, i) => ({ id: m.id, at: new Date(m.at).toISOString(), tx: m.tx, li: i, att: `att_${ulid(m.at)}` })));
  await db`WITH v AS (SELECT * FROM jsonb_to_recordset(${rows}::text::jsonb) AS v(id text, at timestamptz, tx text, li int, att text)),
    e AS (INSERT INTO events (id, subscription_id, key_id, addresses, kind, chain_id, tx_id, log_index, payload, created_at)
      SELECT v.id, ${sub.id}, ${sub.keyId}, ARRAY[${PART_FROM}::text, ${PART_TO}::text], 'wallet.transfer.broadcasted', 'tron:mainnet', v.tx, v.li,
        jsonb_build_object('id', v.id, 'kind', 'wallet.transfer.broadcasted', 'data', '{}'::jsonb), v.at FROM v),
    d AS (INSERT INTO event_deliveries (event_id, created_at, subscription_id, key_id, status, updated_at)
      SELECT v.id, v.at, ${sub.id}, ${sub.keyId}, ${status}, v.at FROM v),
    k AS (INSERT INTO event_transfer_keys (subscription_id, kind, chain_id, tx_id, log_index, internal_index, event_id, event_created_at)
      SELECT ${sub.id}, 'wallet.transfer.broadcasted', 'tron:mainnet', v.tx, v.li, -1, v.id, v.at FROM v),
    a AS (INSERT INTO event_addresses (key_id, address, created_at, event_id)
      SELECT ${sub.keyId}, x, v.at, v.id FROM v, unnest(ARRAY[${PART_FROM}::text, ${PART_TO}::text]) x),
    t AS (INSERT INTO event_tx_refs (key_id, tx_id, created_at, event_id) SELECT ${sub.keyId}, v.tx, v.at, v.id FROM v)
    INSERT INTO delivery_attempts (id, event_id, event_created_at, subscription_id, attempted_at, duration_ms, ok, response_status, trigger)
      SELECT v.att, v.id, v.at, ${sub.id}, v.at, 5, false, 500, 'automatic' FROM v`;
  return made;
}

async function count(table: string, column: string, ids: string[]): Promise<number> {
  const [row] = (await db.unsafe(`SELECT count(*)::int AS n FROM ${table} WHERE ${column} IN (SELECT jsonb_array_elements_text($1::text::jsonb))`, [
    JSON.stringify(ids),
  ])) as { n: number }[];
  return row!.n;
}

/** Every item of a list, page by page (limit 3, so pages cross day boundaries). */
async function walk(key: string, path: string): Promise<string[]> {
  const ids: string[] = [];
  let token: string | undefined;
  for (let guard = 0; guard < 100; guard++) {
    const sep = path.includes("?") ? "&" : "?";
    const res = await call<Page<Ev>>(base, key, "GET", `${path}${sep}limit=3${token ? `&nextPageToken=${encodeURIComponent(token)}` : ""}`);
    expect(res.status).toBe(200);
    ids.push(...res.body.items.map((e) => e.id));
    token = res.body.nextPageToken;
    if (!token) return ids;
  }
  throw new Error("the list never ended");
}

describe("retention", () => {
  test("EVENT_RETENTION_DAYS drops whole days older than the retention; newer events, attempts and addresses stay", async () => {
    const deliverer = env.stack.deliverer!;
    const sub = await subscription();
    const now = Date.now();
    // Daily partitions back to 45 days ago; an event 50 days old has none and sits in the default partition.
    await deliverer.partitions.ensure(new Date(now - 45 * DAY), new Date(now));
    const old = await store(sub, [now - 50 * DAY, now - 40 * DAY, now - 35 * DAY, now - 31 * DAY - 3_600_000]);
    const kept = await store(sub, [now - 29 * DAY, now - 10 * DAY, now - DAY, now - 60_000]);
    const [stray] = (await db`SELECT tableoid::regclass::text AS part FROM events WHERE id = ${old[0]!.id}`) as { part: string }[];
    expect(stray!.part).toBe("events_default");
    const dayName = (t: number) => new Date(t).toISOString().slice(0, 10).replaceAll("-", "");
    const oldPartitions = [40, 35].map((d) => `events_p${dayName(now - d * DAY)}`);
    const parts = async () =>
      ((await db`SELECT relname FROM pg_class WHERE relname IN ${db(oldPartitions)}`) as { relname: string }[]).map((r) => r.relname);
    expect((await parts()).sort()).toEqual([...oldPartitions].sort());

    const dropped = await deliverer.partitions.dropExpired(now);
    // Whole days: the partitions themselves are gone, of every table that shares the events' days.
    expect(await parts()).toEqual([]);
    for (const d of [40, 35]) {
      for (const table of ["events", "event_deliveries", "delivery_attempts"]) {
        expect(dropped).toContain(`${table}_p${dayName(now - d * DAY)}`);
      }
    }
    const oldIds = old.map((e) => e.id);
    const keptIds = kept.map((e) => e.id);
    expect(await count("events", "id", oldIds)).toBe(0);
    expect(await count("event_deliveries", "event_id", oldIds)).toBe(0);
    expect(await count("delivery_attempts", "event_id", oldIds)).toBe(0);
    expect(await count("event_transfer_keys", "event_id", oldIds)).toBe(0);
    // The identities and search refs have no partitions: those of the dropped days go by a ranged delete.
    expect(await count("event_addresses", "event_id", oldIds)).toBe(0);
    expect(await count("event_tx_refs", "event_id", oldIds)).toBe(0);
    expect(await count("events", "id", keptIds)).toBe(4);
    expect(await count("event_deliveries", "event_id", keptIds)).toBe(4);
    expect(await count("delivery_attempts", "event_id", keptIds)).toBe(4);
    expect(await count("event_addresses", "event_id", keptIds)).toBe(8);
    expect(await count("event_transfer_keys", "event_id", keptIds)).toBe(4);
    expect(await count("event_tx_refs", "event_id", keptIds)).toBe(4);

    // The API sees exactly the kept events, each one by id and in the lists.
    expect(await walk(sub.key, `/v1/subscriptions/${sub.id}/events`)).toEqual([...keptIds].reverse());
    expect(await walk(sub.key, `/v1/events?address=${PART_TO}&subscriptionId=${sub.id}`)).toEqual([...keptIds].reverse());
    for (const e of [...old, ...kept]) {
      const found = await call<Page<Ev>>(base, sub.key, "GET", `/v1/events?txId=${e.tx}`);
      expect([e.id, found.body.items.map((x) => x.id)]).toEqual([e.id, keptIds.includes(e.id) ? [e.id] : []]);
    }
    for (const id of keptIds) {
      expect((await call(base, sub.key, "GET", `/v1/subscriptions/${sub.id}/events/${id}`)).status).toBe(200);
      expect((await call<Page<unknown>>(base, sub.key, "GET", `/v1/subscriptions/${sub.id}/events/${id}/attempts`)).body.items).toHaveLength(1);
    }
    expect((await call(base, sub.key, "GET", `/v1/subscriptions/${sub.id}/events/${oldIds[1]}`)).status).toBe(404);

    // Upkeep makes today's and the next days' partitions, and a second pass drops nothing more.
    await deliverer.partitions.maintain(now);
    const ahead = ["events", "event_deliveries"].map((t) => `${t}_p${dayName(now + 3 * DAY)}`);
    const [{ n }] = (await db`SELECT count(*)::int AS n FROM pg_class WHERE relname IN ${db(ahead)}`) as [{ n: number }];
    expect(n).toBe(2);
    expect(await deliverer.partitions.dropExpired(now)).toEqual([]);
  }, 120_000);
});

describe("across partition boundaries", () => {
  test("lists, page tokens, filters and lookups by id cross day boundaries, none skipped or repeated", async () => {
    const deliverer = env.stack.deliverer!;
    const sub = await subscription();
    const now = Date.now();
    const midnight = Math.floor(now / DAY) * DAY;
    await deliverer.partitions.ensure(new Date(now - 4 * DAY), new Date(now));
    // Three events in each of the last four days, two of them on either side of a midnight, one exactly on it.
    const times = [3, 2, 1].flatMap((d) => [midnight - d * DAY + 3_600_000, midnight - d * DAY + 7_200_000, midnight - (d - 1) * DAY - 1]);
    times.push(midnight, Math.min(now - 1_000, midnight + 1_000));
    const made = await store(sub, times.sort((a, b) => a - b));
    const parts = (await db`SELECT count(DISTINCT tableoid)::int AS n FROM events WHERE subscription_id = ${sub.id}`) as [{ n: number }];
    expect(parts[0].n).toBeGreaterThanOrEqual(4);
    const newestFirst = [...made].reverse().map((e) => e.id);

    expect(await walk(sub.key, `/v1/subscriptions/${sub.id}/events`)).toEqual(newestFirst);
    expect(await walk(sub.key, `/v1/subscriptions/${sub.id}/events?status=failed`)).toEqual(newestFirst);
    expect(await walk(sub.key, `/v1/events?subscriptionId=${sub.id}`)).toEqual(newestFirst);
    expect(await walk(sub.key, `/v1/events?address=${PART_FROM}`)).toEqual(newestFirst);
    expect(await walk(sub.key, `/v1/events?status=failed&kind=wallet.transfer.broadcasted`)).toEqual(newestFirst);
    const since = new Date(midnight - DAY).toISOString();
    const until = new Date(midnight + 1).toISOString();
    expect(await walk(sub.key, `/v1/events?since=${since}&until=${until}`)).toEqual(
      newestFirst.filter((_, i) => {
        const t = made[made.length - 1 - i]!.at;
        return t >= midnight - DAY && t < midnight + 1;
      }),
    );
    for (const e of made) {
      const one = await call<Ev>(base, sub.key, "GET", `/v1/subscriptions/${sub.id}/events/${e.id}`);
      expect([one.status, one.body.id]).toEqual([200, e.id]);
      const tx = await call<Page<Ev>>(base, sub.key, "GET", `/v1/events?txId=${e.tx}`);
      expect(tx.body.items.map((x) => x.id)).toEqual([e.id]);
    }
    // Many events of one transaction (its transfers, matched by two subscriptions), paged across the days: the
    // txId's refs in page order, filtered further by subscription and status.
    const other = await subscription(sub);
    const shared = "ab".repeat(32);
    const mine = await store(sub, times.map((t) => t + 10), "delivered", shared);
    const theirs = await store(other, times.map((t) => t + 20), "failed", shared);
    // Another key's events of the same transaction are not this key's to see.
    await store(await subscription(), [now - 5_000], "failed", shared);
    const byTime = [...mine, ...theirs].sort((x, y) => y.at - x.at).map((e) => e.id);
    expect(await walk(sub.key, `/v1/events?txId=${shared}`)).toEqual(byTime);
    expect(await walk(sub.key, `/v1/events?txId=${shared}&subscriptionId=${other.id}`)).toEqual([...theirs].reverse().map((e) => e.id));
    expect(await walk(sub.key, `/v1/events?txId=${shared}&status=delivered`)).toEqual([...mine].reverse().map((e) => e.id));
    expect(await walk(sub.key, `/v1/events?txId=${shared}&address=${PART_TO}&status=failed`)).toEqual([...theirs].reverse().map((e) => e.id));
  }, 120_000);
});

describe("a search whose filters leave out most of the refs", () => {
  /** `n` delivered events of `sub` at `address` alone, 10 ms apart back from now (ids evt_<tag>…), with their refs. */
  async function deliveredAt(sub: { id: string; keyId: string }, address: string, n: number, tag: string): Promise<void> {
    await db`WITH e AS (INSERT INTO events (id, subscription_id, key_id, addresses, kind, chain_id, tx_id, log_index, payload, created_at)
        SELECT 'evt_' || ${tag} || lpad(g::text, 25, '0'), ${sub.id}, ${sub.keyId}, ARRAY[${address}::text], 'wallet.transfer.broadcasted',
          'tron:mainnet', md5(g::text), -1, '{}', now() - g * interval '10 ms'
        FROM generate_series(1, ${n}) g RETURNING id, created_at),
      d AS (INSERT INTO event_deliveries (event_id, created_at, subscription_id, key_id, status, updated_at)
        SELECT e.id, e.created_at, ${sub.id}, ${sub.keyId}, 'delivered', now() FROM e)
      INSERT INTO event_addresses (key_id, address, created_at, event_id) SELECT ${sub.keyId}, ${address}, e.created_at, e.id FROM e`;
  }

  test("reads at most SEARCH_REFS_PER_REQUEST refs a request: a short page with a token that goes on, nothing skipped", async () => {
    const sub = await subscription();
    const now = Date.now();
    // Three failed events an hour ago, and newer than them 12,000 delivered ones at the same address.
    const failed = await store(sub, [now - 3_600_000, now - 3_600_010, now - 3_600_020], "failed");
    await deliveredAt(sub, PART_TO, SEARCH_REFS_PER_REQUEST + 2_000, "S");
    const path = `/v1/events?address=${PART_TO}&status=failed&limit=50`;
    const first = await call<Page<Ev>>(base, sub.key, "GET", path);
    expect([first.status, first.body.items.length, typeof first.body.nextPageToken]).toEqual([200, 0, "string"]);
    const second = await call<Page<Ev>>(base, sub.key, "GET", `${path}&nextPageToken=${encodeURIComponent(first.body.nextPageToken!)}`);
    expect(second.status).toBe(200);
    expect(second.body.items.map((e) => e.id)).toEqual(failed.map((e) => e.id));
    expect(second.body.nextPageToken).toBeUndefined();
    // Without the filter a full page comes at once, as on any list.
    const all = await call<Page<Ev>>(base, sub.key, "GET", `/v1/events?address=${PART_TO}&limit=50`);
    expect([all.body.items.length, typeof all.body.nextPageToken]).toEqual([50, "string"]);
  }, 120_000);

  test("refs that end exactly at SEARCH_REFS_PER_REQUEST: the page that read them is the last, with no token", async () => {
    const sub = await subscription();
    await deliveredAt(sub, EXACT, SEARCH_REFS_PER_REQUEST, "X");
    const none = await call<Page<Ev>>(base, sub.key, "GET", `/v1/events?address=${EXACT}&status=failed&limit=50`);
    expect([none.status, none.body.items.length, none.body.nextPageToken]).toEqual([200, 0, undefined]);
    // One ref more and the share ends before the refs do: the token goes on.
    const [last] = await store(sub, [Date.now() - 3_600_000], "delivered");
    await db`INSERT INTO event_addresses (key_id, address, created_at, event_id)
      SELECT key_id, ${EXACT}, created_at, id FROM events WHERE id = ${last!.id}`;
    const more = await call<Page<Ev>>(base, sub.key, "GET", `/v1/events?address=${EXACT}&status=failed&limit=50`);
    expect([more.status, more.body.items.length, typeof more.body.nextPageToken]).toEqual([200, 0, "string"]);
    const end = await call<Page<Ev>>(base, sub.key, "GET", `/v1/events?address=${EXACT}&status=failed&limit=50&nextPageToken=${encodeURIComponent(more.body.nextPageToken!)}`);
    expect([end.status, end.body.items.length, end.body.nextPageToken]).toEqual([200, 0, undefined]);
  }, 120_000);
});

describe("deleting a subscription with many events", () => {
  test("DELETE returns with the events still being purged; they leave the API at once and go in the background", async () => {
    const sub = await subscription();
    const other = await subscription();
    const total = 30_000;
    // Delivered events (nothing in the schedule), each with an attempt, two address rows and a txId row.
    await db`WITH e AS (INSERT INTO events (id, subscription_id, key_id, addresses, kind, chain_id, tx_id, log_index, payload, created_at)
        SELECT 'evt_P' || lpad(g::text, 25, '0'), ${sub.id}, ${sub.keyId}, ARRAY[${PURGE_A}::text, 'TPurge' || g], 'wallet.transfer.broadcasted',
          'tron:mainnet', md5(g::text), -1, '{}'::jsonb, now() - g * interval '10 ms'
        FROM generate_series(1, ${total}) g RETURNING id, created_at, addresses, tx_id),
      d AS (INSERT INTO event_deliveries (event_id, created_at, subscription_id, key_id, status, updated_at)
        SELECT e.id, e.created_at, ${sub.id}, ${sub.keyId}, 'delivered', now() FROM e),
      a AS (INSERT INTO event_addresses (key_id, address, created_at, event_id) SELECT ${sub.keyId}, x, e.created_at, e.id FROM e, unnest(e.addresses) x),
      t AS (INSERT INTO event_tx_refs (key_id, tx_id, created_at, event_id) SELECT ${sub.keyId}, e.tx_id, e.created_at, e.id FROM e)
      INSERT INTO delivery_attempts (id, event_id, event_created_at, subscription_id, attempted_at, duration_ms, ok, response_status, trigger)
        SELECT 'att_' || substr(e.id, 5), e.id, e.created_at, ${sub.id}, e.created_at, 3, true, 200, 'automatic' FROM e`;
    const keep = await store(other, [Date.now() - 5_000]);

    const res = await call(base, sub.key, "DELETE", `/v1/subscriptions/${sub.id}`);
    expect(res.status).toBe(204);
    // The call returned after one short batch: most of the events are still there, queued for the purge…
    const [{ left }] = (await db`SELECT count(*)::int AS left FROM events WHERE subscription_id = ${sub.id}`) as [{ left: number }];
    const [{ queued }] = (await db`SELECT count(*)::int AS queued FROM event_purges WHERE subscription_id = ${sub.id}`) as [{ queued: number }];
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(total);
    expect(queued).toBe(1);
    // …but already out of the API: the key's search shows none of them.
    const search = await call<Page<Ev>>(base, sub.key, "GET", `/v1/events?address=${PURGE_A}`);
    expect([search.status, search.body.items.length]).toEqual([200, 0]);
    expect(await walk(sub.key, `/v1/events?address=${PURGE_A}`)).toEqual([]);

    // The background purge takes the rest, with their attempts and address rows, and then its request.
    await until("the purge to finish", async () => {
      const [r] = (await db`SELECT
          (SELECT count(*) FROM events WHERE subscription_id = ${sub.id})::int
        + (SELECT count(*) FROM event_deliveries WHERE subscription_id = ${sub.id})::int
        + (SELECT count(*) FROM delivery_attempts WHERE subscription_id = ${sub.id})::int
        + (SELECT count(*) FROM event_addresses WHERE key_id = ${sub.keyId})::int
        + (SELECT count(*) FROM event_tx_refs WHERE key_id = ${sub.keyId})::int
        + (SELECT count(*) FROM event_purges WHERE subscription_id = ${sub.id})::int AS n`) as [{ n: number }];
      return r.n === 0;
    }, 120_000, 200);
    // Another subscription's events are untouched.
    expect(await count("events", "id", keep.map((e) => e.id))).toBe(1);
    expect(await count("event_deliveries", "event_id", keep.map((e) => e.id))).toBe(1);
    expect(await count("event_addresses", "event_id", keep.map((e) => e.id))).toBe(2);
    expect(await count("event_tx_refs", "event_id", keep.map((e) => e.id))).toBe(1);
  }, 180_000);

  test("a purge request outlives its deliverer: the next one to run finishes it", async () => {
    const deliverer = env.stack.deliverer!;
    const sub = await subscription();
    const made = await store(sub, Array.from({ length: 25 }, (_, i) => Date.now() - 60_000 - i * 1_000));
    // Recorded, as DeleteSubscriptionEvents does first, and then the process is gone before any batch ran.
    await deliverer.store.requestPurge(sub.id);
    const restarted = new JobRunner(log).add(eventPurgeJob(deliverer.store, deliverer.schedule, log, { batch: 10, intervalMs: 60_000 }));
    restarted.start();
    try {
      await until("the restarted purge", async () => (await count("events", "id", made.map((e) => e.id))) === 0, 30_000, 50);
    } finally {
      await restarted.stop();
    }
    expect(await count("delivery_attempts", "event_id", made.map((e) => e.id))).toBe(0);
    expect(await count("event_deliveries", "event_id", made.map((e) => e.id))).toBe(0);
    const [{ n }] = (await db`SELECT count(*)::int AS n FROM event_purges WHERE subscription_id = ${sub.id}`) as [{ n: number }];
    expect(n).toBe(0);
  }, 60_000);
});

describe("prepared reads", () => {
  test("every read maps its rows exactly as drizzle does: the view's columns, dates, JSON text, nulls", async () => {
    const reads = env.stack.deliverer!.store;
    const sub = await subscription();
    const now = Date.now();
    const made = await store(sub, [now - 2 * DAY, now - DAY, now - 5_000], "failed", "cd".repeat(32));
    await db`UPDATE event_deliveries SET response_status = 502, response_body = 'bad gateway', next_attempt_at = now()
      WHERE event_id = ${made[2]!.id} AND created_at = ${new Date(made[2]!.at)}`;
    const ids = made.map((e) => e.id);
    // drizzle's own mapping of the same rows (its select builder, executed by drizzle).
    const expected = await reads.db
      .select(eventViewColumns)
      .from(events)
      .innerJoin(eventDeliveries, and(eq(eventDeliveries.eventId, events.id), eq(eventDeliveries.createdAt, events.createdAt)))
      .where(inArray(events.id, ids))
      .orderBy(desc(events.createdAt));
    expect(expected).toHaveLength(3);
    expect(expected[0]!.responseBody).toBe("bad gateway");
    expect(Object.keys(expected[0]!).sort()).toEqual(["attempts", "chainId", "createdAt", "deliveryCount", "held", "heldReason", "id", "kind", "payload", "responseBody", "responseStatus", "status", "subscriptionId"]);
    const page = await reads.listEvents(sub.id, undefined, 10, undefined);
    const failed = await reads.listEvents(sub.id, "failed", 10, undefined);
    const byTx = await reads.searchEvents({ keyId: sub.keyId, txId: "cd".repeat(32) }, 10, undefined);
    const byAddress = await reads.searchEvents({ keyId: sub.keyId, address: PART_TO }, 10, undefined);
    expect([byTx.resumeAfter, byAddress.resumeAfter]).toEqual([undefined, undefined]);
    for (const rows of [page, failed, byTx.rows, byAddress.rows]) expect(rows).toEqual(expected);
  });
});
