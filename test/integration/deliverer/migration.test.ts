// The deliverer's migrations applied to a deployment that already holds events: 0001 made the transfer identity
// (subscription, kind, chain, txId, logIndex, internalIndex); 0004 partitioned the events by day; 0005 moved the
// delivery state into event_deliveries; 0006 gave the txId search its own table (event_tx_refs); 0007 took the
// address search's table (event_addresses) out of the daily partitions; 0008 stored each payload as the text it is
// delivered as; 0009 took the transfer identity (event_transfer_keys) out of the block-day partitions. Every stored row
// keeps its id, payload, stream position, attempts and delivery state, and the identity is still the one enforced.
import { afterAll, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import { ulid } from "ulid";
import { openDatabase, runMigrations, type Database } from "../../../common/db.ts";
import { DELIVERER_MIGRATIONS, DELIVERER_MIGRATIONS_TABLE } from "../../../deliverer/db/connection.ts";
import { delivererSchema } from "../../../deliverer/schema.ts";
import { envelope, renderPayload } from "../../../deliverer/payload.ts";
import { sampleTransferData } from "../../../deliverer/samples.ts";
import { createTestDatabase, type TestDatabase } from "../../support/db.ts";

const databases: TestDatabase[] = [];
const clients: SQL[] = [];
const folders: string[] = [];

/** The migrations folder as it was before `tag`: the journal's entries before it alone. */
function migrationsBefore(tag: string): string {
  const folder = mkdtempSync(join(tmpdir(), "deliverer-migrations-"));
  folders.push(folder);
  cpSync(DELIVERER_MIGRATIONS, folder, { recursive: true });
  const journalPath = join(folder, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: { tag: string }[] };
  const at = journal.entries.findIndex((e) => e.tag === tag);
  expect(at).toBeGreaterThan(0);
  writeFileSync(journalPath, JSON.stringify({ ...journal, entries: journal.entries.slice(0, at) }));
  return folder;
}

async function freshDatabase(label: string): Promise<{ url: string; sql: SQL }> {
  const database = await createTestDatabase(label);
  databases.push(database);
  const sql = new SQL(database.url, { max: 2 });
  clients.push(sql);
  return { url: database.url, sql };
}

async function migrate(url: string, folder: string): Promise<void> {
  const db = openDatabase(url, delivererSchema, { max: 2 }) as unknown as Database<Record<string, unknown>>;
  try {
    await runMigrations(db, folder, DELIVERER_MIGRATIONS_TABLE);
  } finally {
    await db.$client.close();
  }
}


afterAll(async () => {
  for (const c of clients) await c.close();
  for (const d of databases) await d.drop();
  for (const f of folders) rmSync(f, { recursive: true, force: true });
}, 60_000);

test("existing events keep their ids; the unique key becomes (subscription, kind, chain, txId, logIndex, internalIndex)", async () => {
  const { url, sql } = await freshDatabase("delmig");
  await migrate(url, migrationsBefore("0001_events_transfer_identity"));
  const at = new Date("2026-11-20T10:00:00.000Z");
  const old = [
    { id: "evt_01JOLDAAAAAAAAAAAAAAAAAAAA", kind: "wallet.transfer.broadcasted", chain: "tron:mainnet", tx: "aa".repeat(32), li: -1 },
    { id: "evt_01JOLDBBBBBBBBBBBBBBBBBBBB", kind: "wallet.transfer.broadcasted", chain: "tron:mainnet", tx: "aa".repeat(32), li: 2 },
    { id: "evt_01JOLDCCCCCCCCCCCCCCCCCCCC", kind: "service.ping", chain: null, tx: null, li: null },
  ];
  for (const e of old) {
    await sql`INSERT INTO events (id, subscription_id, kind, chain_id, tx_id, log_index, payload, status, created_at, updated_at)
      VALUES (${e.id}, 'sub_01JOLDSUBSCRIPTIONAAAAAAAA', ${e.kind}, ${e.chain}, ${e.tx}, ${e.li},
        ${JSON.stringify({ id: e.id, kind: e.kind, data: e.chain ? { blockTimestamp: at.getTime() } : {} })}::text::jsonb, 'delivered', ${at}, ${at})`;
  }
  await migrate(url, DELIVERER_MIGRATIONS);

  const rows = (await sql`SELECT id, kind, log_index, internal_index, payload::json->>'id' AS pid FROM events ORDER BY id`) as {
    id: string;
    kind: string;
    log_index: number | null;
    internal_index: number;
    pid: string;
  }[];
  expect(rows.map((r) => [r.id, r.pid, r.internal_index])).toEqual(old.map((e) => [e.id, e.id, -1]));

  // The identity lives in event_transfer_keys (a unique key on the partitioned events would need created_at).
  const [pk] = (await sql`SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'event_transfer_keys_pkey'`) as { def: string }[];
  expect(pk!.def).toBe("PRIMARY KEY (subscription_id, kind, chain_id, tx_id, log_index, internal_index)");
  const keys = (await sql`SELECT event_id FROM event_transfer_keys ORDER BY event_id`) as { event_id: string }[];
  expect(keys).toEqual([{ event_id: old[0]!.id }, { event_id: old[1]!.id }]);

  // The same transfer as a confirmed event, and an internal transfer of the same transaction: both new.
  const claim = (id: string, kind: string, ii: number) => sql`INSERT INTO event_transfer_keys
      (subscription_id, kind, chain_id, tx_id, log_index, internal_index, event_id, event_created_at)
    VALUES ('sub_01JOLDSUBSCRIPTIONAAAAAAAA', ${kind}, 'tron:mainnet', ${"aa".repeat(32)}, -1, ${ii}, ${id}, now())
    ON CONFLICT DO NOTHING RETURNING event_id`;
  expect(await claim("evt_01JNEWAAAAAAAAAAAAAAAAAAAA", "wallet.transfer.confirmed", -1)).toHaveLength(1);
  expect(await claim("evt_01JNEWBBBBBBBBBBBBBBBBBBBB", "wallet.transfer.broadcasted", 1)).toHaveLength(1);
  // The old broadcasted event's identity still holds.
  expect(await claim("evt_01JNEWCCCCCCCCCCCCCCCCCCCC", "wallet.transfer.broadcasted", -1)).toHaveLength(0);
}, 60_000);

test("partitioning carries every row over: a partition per day, attempts beside their events, stream positions kept", async () => {
  const { url, sql } = await freshDatabase("delmigpart");
  await migrate(url, migrationsBefore("0004_events_partitioned"));
  const now = Date.now();
  const days = [40, 3, 1, 0].map((d) => now - d * 86_400_000);
  const made = days.map((t, i) => ({ id: `evt_${ulid(t)}`, at: new Date(t), tx: `${i}`.repeat(64) }));
  for (const e of made) {
    await sql`INSERT INTO events (id, subscription_id, key_id, addresses, kind, chain_id, tx_id, log_index, payload, status, created_at, updated_at)
      VALUES (${e.id}, 'sub_01JMIGSUBSCRIPTIONAAAAAAAA', 'key_01JMIGKEYAAAAAAAAAAAAAAAAA', ${sql.array(["TFrom" + e.tx.slice(0, 4), "TTo"])}::text[],
        'wallet.transfer.broadcasted', 'tron:mainnet', ${e.tx}, -1,
        ${JSON.stringify({ id: e.id, data: { blockTimestamp: e.at.getTime() } })}::text::jsonb, 'failed', ${e.at}, ${e.at})`;
    await sql`INSERT INTO delivery_attempts (id, event_id, subscription_id, attempted_at, duration_ms, ok, response_status, trigger)
      VALUES (${`att_${ulid(e.at.getTime())}`}, ${e.id}, 'sub_01JMIGSUBSCRIPTIONAAAAAAAA', ${e.at}, 12, false, 500, 'automatic')`;
  }
  const before = (await sql`SELECT id, xid::text AS xid, seq FROM events ORDER BY seq`) as { id: string; xid: string; seq: number }[];
  // Up to 0004 (the next test carries on from there).
  await migrate(url, migrationsBefore("0005_event_deliveries"));

  const after = (await sql`SELECT id, xid::text AS xid, seq, tableoid::regclass::text AS part FROM events ORDER BY seq`) as {
    id: string; xid: string; seq: number; part: string;
  }[];
  expect(after.map(({ id, xid, seq }) => ({ id, xid, seq: Number(seq) }))).toEqual(before.map(({ id, xid, seq }) => ({ id, xid, seq: Number(seq) })));
  const dayName = (t: number) => `events_p${new Date(t).toISOString().slice(0, 10).replaceAll("-", "")}`;
  expect(after.map((r) => r.part)).toEqual(days.map(dayName));

  const [{ kind }] = (await sql`SELECT c.relkind AS kind FROM pg_class c WHERE c.relname = 'events'`) as [{ kind: string }];
  expect(kind).toBe("p");
  const atts = (await sql`SELECT event_id, event_created_at, tableoid::regclass::text AS part FROM delivery_attempts ORDER BY event_created_at`) as {
    event_id: string; event_created_at: Date; part: string;
  }[];
  expect(atts.map((a) => [a.event_id, a.event_created_at.getTime(), a.part])).toEqual(
    made.map((e) => [e.id, e.at.getTime(), dayName(e.at.getTime()).replace("events_", "delivery_attempts_")]),
  );
  const addrs = (await sql`SELECT count(*)::int AS n FROM event_addresses WHERE key_id = 'key_01JMIGKEYAAAAAAAAAAAAAAAAA' AND address = 'TTo'`) as [{ n: number }];
  expect(addrs[0]!.n).toBe(4);
  // Today's and the next days' partitions exist, so new events land in a daily partition, and seq goes on.
  const [fresh] = (await sql`INSERT INTO events (id, subscription_id, kind, payload, status, created_at, updated_at)
    VALUES (${`evt_${ulid()}`}, 'sub_01JMIGSUBSCRIPTIONAAAAAAAA', 'service.ping', '{}'::jsonb, 'pending', now() + interval '2 days', now())
    RETURNING seq, tableoid::regclass::text AS part`) as { seq: number; part: string }[];
  expect(Number(fresh!.seq)).toBeGreaterThan(Math.max(...before.map((b) => Number(b.seq))));
  expect(fresh!.part).toBe(dayName(now + 2 * 86_400_000));
  const [{ n }] = (await sql`SELECT count(*)::int AS n FROM pg_class WHERE relname IN ('events_unpartitioned', 'delivery_attempts_unpartitioned')`) as [{ n: number }];
  expect(n).toBe(0);
}, 60_000);

test("the delivery state moves to event_deliveries: every event keeps its state, in the partition of its day", async () => {
  const { url, sql } = await freshDatabase("delmigstate");
  await migrate(url, migrationsBefore("0005_event_deliveries"));
  const now = Date.now();
  const day = 86_400_000;
  // A partition for each day back to 5 days ago; the event 50 days old sits in the default partition.
  for (let d = 5; d >= 1; d--) await sql`SELECT deliverer_ensure_partition('events', ${new Date(now - d * day).toISOString().slice(0, 10)}::date)`;
  const states = [
    { ago: 50 * day, status: "failed", attempts: 7, count: 0, rs: 500, rb: "nope", next: null, held: false, trigger: "automatic" },
    { ago: 3 * day, status: "delivered", attempts: 2, count: 3, rs: 200, rb: "ok", next: null, held: false, trigger: "manual" },
    { ago: 2 * day, status: "pending", attempts: 1, count: 0, rs: 503, rb: "later", next: new Date(now + 60_000), held: false, trigger: "automatic" },
    { ago: 1 * day, status: "pending", attempts: 0, count: 0, rs: null, rb: null, next: new Date(now - 5_000), held: true, trigger: "automatic" },
    { ago: 60_000, status: "pending", attempts: 0, count: 0, rs: null, rb: null, next: new Date(now), held: false, trigger: "manual" },
  ].map((st, i) => ({ ...st, id: `evt_${ulid(now - st.ago)}`, at: new Date(now - st.ago), updated: new Date(now - st.ago + 1_000 + i) }));
  for (const e of states) {
    await sql`INSERT INTO events (id, subscription_id, key_id, kind, payload, status, attempts, delivery_count, response_status,
        response_body, next_attempt_at, held, trigger, created_at, updated_at)
      VALUES (${e.id}, 'sub_01JMIGSUBSCRIPTIONAAAAAAAA', 'key_01JMIGKEYAAAAAAAAAAAAAAAAA', 'service.ping', ${JSON.stringify({ id: e.id })}::text::jsonb,
        ${e.status}, ${e.attempts}, ${e.count}, ${e.rs}, ${e.rb}, ${e.next}, ${e.held}, ${e.trigger}, ${e.at}, ${e.updated})`;
  }
  const before = (await sql`SELECT id, xid::text AS xid, seq, payload FROM events ORDER BY seq`) as { payload: unknown }[];
  await migrate(url, DELIVERER_MIGRATIONS);

  // The events themselves are untouched (the payload only turned into its delivered text, 0008), and no longer
  // carry the state.
  expect(await sql`SELECT id, xid::text AS xid, seq, payload FROM events ORDER BY seq`).toEqual(before.map((r) => ({ ...r, payload: renderPayload(r.payload) })));
  const cols = (await sql`SELECT column_name AS c FROM information_schema.columns WHERE table_name = 'events' ORDER BY ordinal_position`) as { c: string }[];
  expect(cols.map((r) => r.c)).toEqual([
    "id", "subscription_id", "key_id", "kind", "chain_id", "tx_id", "log_index", "addresses", "internal_index", "payload", "created_at", "xid", "seq",
  ]);
  const eventIndexes = (await sql`SELECT indexname AS i FROM pg_indexes WHERE tablename = 'events' ORDER BY 1`) as { i: string }[];
  expect(eventIndexes.map((r) => r.i)).toEqual([
    "events_key_chain_page_idx", "events_key_kind_page_idx", "events_key_page_idx", "events_pkey", "events_stream_idx",
    "events_subscription_page_idx",
  ]);

  const rows = (await sql`SELECT event_id, created_at, subscription_id, key_id, status, attempts, delivery_count, response_status,
      response_body, next_attempt_at, held, trigger, updated_at, tableoid::regclass::text AS part
    FROM event_deliveries ORDER BY created_at`) as {
    event_id: string; created_at: Date; subscription_id: string; key_id: string; status: string; attempts: number; delivery_count: number;
    response_status: number | null; response_body: string | null; next_attempt_at: Date | null; held: boolean; trigger: string; updated_at: Date; part: string;
  }[];
  const partOf = (e: (typeof states)[number]) =>
    e.ago > 5 * day ? "event_deliveries_default" : `event_deliveries_p${e.at.toISOString().slice(0, 10).replaceAll("-", "")}`;
  expect(rows.map((r) => ({ ...r, created_at: r.created_at.getTime(), updated_at: r.updated_at.getTime(), next_attempt_at: r.next_attempt_at?.getTime() ?? null })))
    .toEqual(states.map((e) => ({
      event_id: e.id, created_at: e.at.getTime(), subscription_id: "sub_01JMIGSUBSCRIPTIONAAAAAAAA", key_id: "key_01JMIGKEYAAAAAAAAAAAAAAAAA",
      status: e.status, attempts: e.attempts, delivery_count: e.count, response_status: e.rs, response_body: e.rb,
      next_attempt_at: e.next?.getTime() ?? null, held: e.held, trigger: e.trigger, updated_at: e.updated.getTime(), part: partOf(e),
    })));
  // Every daily partition of events has its twin, with the same bounds.
  const bounds = (parent: string) =>
    sql`SELECT regexp_replace(c.relname, '^' || ${parent} || '_', '') AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = ${parent} ORDER BY 1`;
  expect(await bounds("event_deliveries")).toEqual(await bounds("events"));
  // The schedule's reads find the pending, not held events through the partial index; the held one through its own.
  const pending = (await sql`SELECT event_id FROM event_deliveries WHERE status = 'pending' AND NOT held ORDER BY next_attempt_at`) as { event_id: string }[];
  expect(pending.map((r) => r.event_id)).toEqual([states[4]!.id, states[2]!.id]);
  const indexes = (await sql`SELECT indexname AS i FROM pg_indexes WHERE tablename = 'event_deliveries' ORDER BY 1`) as { i: string }[];
  expect(indexes.map((r) => r.i)).toEqual([
    "event_deliveries_held_idx", "event_deliveries_key_status_page_idx", "event_deliveries_pending_idx", "event_deliveries_pkey",
    "event_deliveries_subscription_status_page_idx",
  ]);
}, 60_000);

test("the txId refs are filled from the stored events: one per event with a key and a txId, found by the search's index", async () => {
  const { url, sql } = await freshDatabase("delmigtx");
  await migrate(url, migrationsBefore("0006_event_tx_refs"));
  const now = Date.now();
  const made = [5, 1, 0].map((d, i) => ({ id: `evt_${ulid(now - d * 86_400_000)}`, at: new Date(now - d * 86_400_000), tx: `${i + 1}`.repeat(64) }));
  for (const e of made) {
    await sql`INSERT INTO events (id, subscription_id, key_id, kind, chain_id, tx_id, log_index, payload, created_at)
      VALUES (${e.id}, 'sub_01JMIGSUBSCRIPTIONAAAAAAAA', 'key_01JMIGKEYAAAAAAAAAAAAAAAAA', 'wallet.transfer.broadcasted', 'tron:mainnet',
        ${e.tx}, -1, ${JSON.stringify({ id: e.id })}::text::jsonb, ${e.at})`;
  }
  // A test event (no txId) and an event from before keys were recorded (no key): neither has a ref.
  await sql`INSERT INTO events (id, subscription_id, key_id, kind, payload, created_at)
    VALUES (${`evt_${ulid()}`}, 'sub_01JMIGSUBSCRIPTIONAAAAAAAA', 'key_01JMIGKEYAAAAAAAAAAAAAAAAA', 'service.ping', '{}'::jsonb, now())`;
  await sql`INSERT INTO events (id, subscription_id, kind, chain_id, tx_id, log_index, payload, created_at)
    VALUES (${`evt_${ulid()}`}, 'sub_01JMIGSUBSCRIPTIONAAAAAAAA', 'wallet.transfer.broadcasted', 'tron:mainnet', ${"9".repeat(64)}, -1, '{}'::jsonb, now())`;
  await migrate(url, DELIVERER_MIGRATIONS);

  const refs = (await sql`SELECT key_id, tx_id, created_at, event_id FROM event_tx_refs ORDER BY created_at`) as {
    key_id: string; tx_id: string; created_at: Date; event_id: string;
  }[];
  expect(refs.map((r) => [r.key_id, r.tx_id, r.created_at.getTime(), r.event_id])).toEqual(
    made.map((e) => ["key_01JMIGKEYAAAAAAAAAAAAAAAAA", e.tx, e.at.getTime(), e.id]),
  );
  const indexes = (await sql`SELECT indexname AS i FROM pg_indexes WHERE tablename = 'event_tx_refs' ORDER BY 1`) as { i: string }[];
  expect(indexes.map((r) => r.i)).toEqual(["event_tx_refs_page_idx", "event_tx_refs_pkey"]);
  const [{ kind }] = (await sql`SELECT relkind AS kind FROM pg_class WHERE relname = 'event_tx_refs'`) as [{ kind: string }];
  expect(kind).toBe("r");
}, 60_000);

test("the address rows leave the daily partitions: every row kept once, keyed by time, found by the search's index", async () => {
  const { url, sql } = await freshDatabase("delmigaddr");
  await migrate(url, migrationsBefore("0007_event_addresses_unpartitioned"));
  const key = "key_01JMIGKEYAAAAAAAAAAAAAAAAA";
  const now = Date.now();
  // Two days' partitions and the default one (an event 60 days old); the newest event has one address only.
  const made = [60, 5, 0].map((d, i) => ({ id: `evt_${ulid(now - d * 86_400_000)}`, at: new Date(now - d * 86_400_000), addrs: i === 2 ? ["TA"] : ["TA", `TB${i}`] }));
  await sql`SELECT deliverer_ensure_partition('event_addresses', ${made[1]!.at}::date)`;
  for (const e of made) {
    for (const a of e.addrs) {
      await sql`INSERT INTO event_addresses (key_id, address, created_at, event_id) VALUES (${key}, ${a}, ${e.at}, ${e.id})`;
    }
  }
  const [{ parts }] = (await sql`SELECT count(DISTINCT tableoid)::int AS parts FROM event_addresses`) as [{ parts: number }];
  expect(parts).toBe(3);
  await migrate(url, DELIVERER_MIGRATIONS);

  const rows = (await sql`SELECT key_id, address, created_at, event_id FROM event_addresses ORDER BY created_at, address`) as {
    key_id: string; address: string; created_at: Date; event_id: string;
  }[];
  expect(rows.map((r) => [r.key_id, r.address, r.created_at.getTime(), r.event_id])).toEqual(
    made.flatMap((e) => e.addrs.map((a) => [key, a, e.at.getTime(), e.id])),
  );
  const [{ kind }] = (await sql`SELECT relkind AS kind FROM pg_class WHERE relname = 'event_addresses'`) as [{ kind: string }];
  expect(kind).toBe("r");
  const left = (await sql`SELECT relname FROM pg_class WHERE relname LIKE 'event_addresses%' AND relkind IN ('r', 'p') ORDER BY 1`) as { relname: string }[];
  expect(left.map((r) => r.relname)).toEqual(["event_addresses"]);
  const indexes = (await sql`SELECT indexname AS i FROM pg_indexes WHERE tablename = 'event_addresses' ORDER BY 1`) as { i: string }[];
  expect(indexes.map((r) => r.i)).toEqual(["event_addresses_page_idx", "event_addresses_pkey"]);
  // The same (event, address) twice is refused: the search would list the event twice.
  const again = sql`INSERT INTO event_addresses (key_id, address, created_at, event_id) VALUES (${key}, 'TA', ${made[2]!.at}, ${made[2]!.id})`;
  await expect(again).rejects.toThrow(/event_addresses_pkey/);
}, 60_000);

test("each payload becomes the text the deliverer sent for it: the same bytes, whatever jsonb did to its keys", async () => {
  const { url, sql } = await freshDatabase("delmigpayload");
  await migrate(url, migrationsBefore("0008_event_payload_text"));
  const now = new Date();
  const awkward = 'quote " backslash \\ newline \n tab \t bell \u0007 del \u007f é 中文 😀 line sep \u2028 end';
  const trc20 = sampleTransferData("tron:mainnet", "wallet.transfer.confirmed", now);
  const payloads: Record<string, unknown>[] = [
    envelope(`evt_${ulid()}`, "wallet.transfer.confirmed", "sub_01JMIGSUBSCRIPTIONAAAAAAAA", now, { ...trc20, memo: awkward }),
    envelope(`evt_${ulid()}`, "wallet.transfer.failed", "sub_01JMIGSUBSCRIPTIONAAAAAAAA", now, { ...sampleTransferData("tron:nile", "wallet.transfer.failed", now), asset: null }),
    envelope(`evt_${ulid()}`, "service.ping", "sub_01JMIGSUBSCRIPTIONAAAAAAAA", now, { message: awkward }),
    // Keys the contract does not order, an integer-like key (JavaScript lists those first), nesting, no data at all.
    { ...envelope(`evt_${ulid()}`, "wallet.transfer.broadcasted", "sub_01JMIGSUBSCRIPTIONAAAAAAAA", now, { ...trc20, zeta: { b: [1, 2.5, null, true, "x", {}], a: [] }, "10": "ten" }), extra: 1 },
    { id: `evt_${ulid()}`, kind: "service.ping" },
  ];
  for (const p of payloads) {
    await sql`INSERT INTO events (id, subscription_id, kind, payload, created_at) VALUES (${p.id as string}, 'sub_01JMIGSUBSCRIPTIONAAAAAAAA', ${p.kind as string},
      ${JSON.stringify(p)}::text::jsonb, ${now})`;
    await sql`INSERT INTO event_deliveries (event_id, created_at, subscription_id, status, updated_at)
      VALUES (${p.id as string}, ${now}, 'sub_01JMIGSUBSCRIPTIONAAAAAAAA', 'delivered', ${now})`;
  }
  // What a delivery sent before: the stored jsonb's text, parsed and rendered (deliverer/payload.ts). (jsonb refuses
  // a NUL character, which the text kept now takes, escaped as JSON.stringify escapes it.)
  const texts = async (column: string) => {
    const rows = (await sql.unsafe(`SELECT id, ${column} AS p FROM events`)) as { id: string; p: string }[];
    const byId = new Map(rows.map((r) => [r.id, r.p]));
    return payloads.map((p) => byId.get(p.id as string)!);
  };
  const sent = (await texts("payload::text")).map((t) => renderPayload(JSON.parse(t)));
  await migrate(url, DELIVERER_MIGRATIONS);

  const stored = await texts("payload");
  expect(stored).toEqual(sent);
  // The contract's order, not jsonb's, in the text kept (jsonb puts shorter keys first).
  expect(stored[0]!.startsWith(`{"id":"${payloads[0]!.id}","kind":"wallet.transfer.confirmed","date":`)).toBe(true);
  expect(stored[3]!).toContain(`"data":{"10":"ten","chainId":"tron:mainnet",`);
  expect(stored[4]!).toBe(`{"id":"${payloads[4]!.id}","kind":"service.ping","data":{}}`);
  // Kept a JSON object: anything else is refused.
  const bad = sql`INSERT INTO events (id, subscription_id, kind, payload, created_at) VALUES ('evt_bad', 'sub_x', 'service.ping', '[1]', now())`;
  await expect(bad).rejects.toThrow(/events_payload_object/);
}, 60_000);

test("the transfer identity leaves the block-day partitions: one row per transfer, the first event's, whatever its day", async () => {
  const { url, sql } = await freshDatabase("delmigkeys");
  await migrate(url, migrationsBefore("0009_event_transfer_keys_unpartitioned"));
  const sub = "sub_01JKEYSUBSCRIPTIONAAAAAAAA";
  const kind = "wallet.transfer.broadcasted";
  // One transfer whose fork put it in blocks on either side of a midnight: two rows, two events (the fault); another
  // transfer with one row.
  const rows = [
    { id: "evt_01JKEYFIRSTAAAAAAAAAAAAAAA", tx: "ab".repeat(32), day: "2026-11-20", at: "2026-11-20T23:59:58.000Z" },
    { id: "evt_01JKEYSECONDAAAAAAAAAAAAAA", tx: "ab".repeat(32), day: "2026-11-21", at: "2026-11-21T00:00:04.000Z" },
    { id: "evt_01JKEYOTHERAAAAAAAAAAAAAAA", tx: "cd".repeat(32), day: "2026-11-21", at: "2026-11-21T00:00:05.000Z" },
  ];
  for (const r of rows) {
    await sql`SELECT deliverer_ensure_partition('event_transfer_keys', ${r.day}::date)`;
    await sql`INSERT INTO event_transfer_keys (subscription_id, kind, chain_id, tx_id, log_index, internal_index, block_day, event_id, event_created_at)
      VALUES (${sub}, ${kind}, 'tron:mainnet', ${r.tx}, -1, -1, ${r.day}::date, ${r.id}, ${r.at}::timestamptz)`;
  }
  await migrate(url, DELIVERER_MIGRATIONS);

  const [{ kind: relkind }] = (await sql`SELECT relkind AS kind FROM pg_class WHERE relname = 'event_transfer_keys'`) as [{ kind: string }];
  expect(relkind).toBe("r");
  const parts = (await sql`SELECT relname FROM pg_class WHERE relname LIKE 'event_transfer_keys%' AND relkind IN ('r', 'p') ORDER BY relname`) as { relname: string }[];
  expect(parts.map((p) => p.relname)).toEqual(["event_transfer_keys"]);
  const kept = (await sql`SELECT tx_id, event_id, event_created_at FROM event_transfer_keys ORDER BY tx_id`) as { tx_id: string; event_id: string; event_created_at: Date }[];
  expect(kept.map((k) => [k.tx_id, k.event_id, new Date(k.event_created_at).toISOString()])).toEqual([
    [rows[0]!.tx, rows[0]!.id, rows[0]!.at],
    [rows[2]!.tx, rows[2]!.id, rows[2]!.at],
  ]);
  // The identity holds across days now: the transfer claimed again (any block, any day) finds its row.
  const again = await sql`INSERT INTO event_transfer_keys (subscription_id, kind, chain_id, tx_id, log_index, internal_index, event_id, event_created_at)
    VALUES (${sub}, ${kind}, 'tron:mainnet', ${rows[0]!.tx}, -1, -1, 'evt_01JKEYTHIRDAAAAAAAAAAAAAAA', now()) ON CONFLICT DO NOTHING RETURNING event_id`;
  expect(again).toHaveLength(0);
  const [idx] = (await sql`SELECT indexdef FROM pg_indexes WHERE indexname = 'event_transfer_keys_created_idx'`) as { indexdef: string }[];
  expect(idx!.indexdef).toContain("(event_created_at)");
}, 60_000);
