// A claim's rows are read by their ids on the primary key, on the generic plan the deliverer's connections use: never
// every event between the claim's first and last times. In a catch-up the claimed events are a small share of the
// events created meanwhile, and reading the whole window cost 70-160 ms a claim (deliverer/db/claims.sql).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { CLAIMED_ROWS_SQL } from "../../../deliverer/db/claims.ts";
import { openDelivererDatabase, type DelivererDb } from "../../../deliverer/db/connection.ts";
import { createTestDatabase, type TestDatabase } from "../../support/db.ts";

let database: TestDatabase;
let db: DelivererDb;
const EVENTS = 6_000;
/** Every STRIDE-th event is claimed: 200 of the 6,000 created over the same stretch of time. */
const STRIDE = 30;

beforeAll(async () => {
  database = await createTestDatabase("claimload");
  db = await openDelivererDatabase(database.url, { max: 2 });
  const sql = db.$client;
  // One event a second from 01:00 today (UTC): all in today's partition, which the migrations create.
  await sql`INSERT INTO events (id, subscription_id, key_id, addresses, kind, chain_id, tx_id, log_index, payload, created_at)
    SELECT 'evt_C' || lpad(g::text, 25, '0'), 'sub_C' || (g % 7), 'key_C', ARRAY['TA' || g], 'wallet.transfer.broadcasted',
      'tron:mainnet', md5(g::text) || md5(g::text), 0, '{}', date_trunc('day', now()) + interval '1 hour' + g * interval '1 second'
    FROM generate_series(1, ${EVENTS}) g`;
  await sql`INSERT INTO event_deliveries (event_id, created_at, subscription_id, key_id, status, updated_at)
    SELECT id, created_at, subscription_id, key_id, 'pending', created_at FROM events WHERE id LIKE 'evt_C%'`;
  await sql`ANALYZE events`;
  await sql`ANALYZE event_deliveries`;
}, 120_000);

afterAll(async () => {
  await db?.$client.close();
  await database?.drop();
}, 60_000);

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Actual Rows": number;
  "Actual Loops": number;
  Plans?: PlanNode[];
}

/** Rows the plan's scans of `events` partitions produced. */
function eventRowsRead(node: PlanNode): number {
  const own = node["Relation Name"]?.startsWith("events_") && /Scan/.test(node["Node Type"]) ? node["Actual Rows"] * node["Actual Loops"] : 0;
  return own + (node.Plans ?? []).reduce((n, p) => n + eventRowsRead(p), 0);
}

test("a claim's rows are read by id: as many event rows as ids, on the generic plan", async () => {
  const sql = db.$client;
  const all = (await sql`SELECT id, created_at FROM events WHERE id LIKE 'evt_C%' ORDER BY id`) as { id: string; created_at: Date }[];
  const claimed = all.filter((_, i) => i % STRIDE === 0);
  const from = new Date(claimed[0]!.created_at).toISOString();
  const to = new Date(claimed.at(-1)!.created_at).toISOString();
  const ids = JSON.stringify(claimed.map((r) => r.id));

  // The statement as the worker runs it returns every claimed row with its state.
  const rows = (await sql.unsafe(CLAIMED_ROWS_SQL, [ids, from, to])) as { id: string; status: string }[];
  expect(rows.map((r) => r.id).sort()).toEqual(claimed.map((r) => r.id));
  expect(new Set(rows.map((r) => r.status))).toEqual(new Set(["pending"]));

  // Its generic plan (the deliverer's connections force it), through a prepared statement on one connection.
  const one = new SQL(database.url, { max: 1 });
  try {
    await one.unsafe("SET plan_cache_mode = force_generic_plan");
    await one.unsafe(`PREPARE claim(text, timestamptz, timestamptz) AS ${CLAIMED_ROWS_SQL}`);
    const quote = (v: string) => `'${v.replaceAll("'", "''")}'`;
    const [out] = (await one.unsafe(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE claim(${quote(ids)}, ${quote(from)}, ${quote(to)})`)) as { "QUERY PLAN": [{ Plan: PlanNode }] }[];
    const plan = out!["QUERY PLAN"][0].Plan;
    // The window holds ~STRIDE times as many events as the claim; reading them all is the defect this guards.
    expect(eventRowsRead(plan)).toBe(claimed.length);
  } finally {
    await one.close();
  }
}, 60_000);
