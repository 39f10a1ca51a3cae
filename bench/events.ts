// `bun run bench events`: GET /v1/events with a txId or an address filter on a large events table, p99 through HTTP
// (wrk, 16 connections in a closed loop, each phase after a 3-second warm-up) beside a primary-key lookup (GET one
// event) measured in the same run; then recover of 100,000 failed events: the
// time to re-queue them and the API's p99 while it runs against its idle p99. The deliverer's worker does not run,
// so nothing is sent anywhere. BENCH_EVENTS sets the table's size (default 10,000,000), BENCH_SECONDS each load
// phase (default 10 s), BENCH_RECOVER_EVENTS the recover's size (default 100,000, or 1 % of a smaller table),
// BENCH_PHASES=pk,txId,address,busy,page,recover the phases run (to profile one with `bun --cpu-prof`). Targets:
// filtered p99 ≤ 20 ms; recover ≤ 30 s; API p99 during recover ≤ 2× idle. Each phase also prints the CPU it cost
// per request in this process (gateway, registry and deliverer), in the run's PostgreSQL backends and in wrk (a
// Bun fetch loop in its place had cost more CPU per request than the server's own work, on the same cores): on a shared
// 2-core machine the latency moves with everyone else's work, the CPU per request much less (though it too rises
// by up to half when the machine is crowded).
//
// The rows span the last 29 days (inside the default 30-day retention), one daily partition each, as a deployment
// keeps them. They are made fast the way a bulk load is: each day's events and states are written into a plain table
// with INSERT … SELECT generate_series, which is then attached as that day's partition (PostgreSQL builds the
// partition's indexes in one sorted pass on ATTACH instead of ten index inserts per row); the unpartitioned search
// refs get their page indexes built after the load. Ids are ULIDs of their
// created_at, as the deliverer mints them. 1 event in 100 is the benchmark key's (one subscription); the newest
// 100,000 events are a second subscription's, failed (the recover phase). The rest spread over 999 other keys.
// The values the bench queries are ones the API accepts (it answers 400 to a malformed txId or address): txIds of 64
// hex digits, and real base58check addresses from a pool made in JS with common/tron-address.ts (1.3 s for 200,000
// at load 2.4, so about 6 s for the 1,000,003 of a full run).
//
// Where the time goes (EXPLAIN ANALYZE, printed by the run): a txId page is a range of event_tx_refs_page_idx (key,
// txId, created_at DESC, event id DESC) in one unpartitioned table, then its events by id in their days; an address
// page is a range of event_addresses_page_idx (key, address, created_at DESC, event id DESC), unpartitioned too, then
// its events the same way. Neither sorts, so a page costs the same for an address with 10 events or 10,000. The rest
// of a request is the gateway → deliverer hop and JSON. When the txId search probed events_tx_idx in each of the ~30
// daily partitions it cost PostgreSQL 471 µs of CPU per request against GET one event's 139 µs (1,000,000 rows), and
// its p99 was 75 ms against 7 ms; through event_tx_refs it costs 144 µs and its p99 is GET one event's. The address
// rows were partitioned by day as well until the same change was made to them: a rare address cost PostgreSQL ~320
// µs per request, and 137 µs after it (1,000,000 rows; p99 14–21 → 8.3 ms). Planning over 30 partitions × 10
// indexes outweighs execution, which is why a search is two single-table statements (the join of two partitioned
// tables planned in 10–60 ms).
// EXPLAIN plans each time; the API does not. Bun's SQL driver runs every statement as a named prepared statement on
// its connection, and the deliverer's connections keep each on its generic plan (plan_cache_mode force_generic_plan,
// deliverer/db/connection.ts): PostgreSQL's default re-planned one event by id on every run, ~0.15 ms, where the generic plan
// prunes the same partitions when it starts. That generic plan is estimated at every partition's share, and at
// 10,000,000 rows the 50-event page phase's passed jit_above_cost: PostgreSQL compiled it on every run (auto_explain:
// 370 functions for 381 buffer hits, p50 ~1.8 s), until the services' connections turned JIT off (common/db.ts).
//
// In the stack (2026-11-24, `bun --cpu-prof` of the txId phase): drizzle built each statement's text from its query
// builder on every run, 45% of the stack's samples; the event reads are now built once per shape and prepared
// (deliverer/prepared.ts), which halved the stack's CPU per request (GET one event 439 → 189 µs, txId 406 → 212,
// a rare address 513 → 227, at 1,000,000 rows). Before that a 50-event page spent about as much in the gateway's
// rendering (JSON.parse of each payload, Elysia's check of the page, JSON.stringify again) as in the deliverer; the
// gateway splices the payload JSON into the answer (gateway/routes/events/view.ts eventJson), and the payload is stored as
// that JSON (deliverer/schema.ts), so nothing parses or serializes it on the way. Drizzle's row mapping (mapResultRow:
// each field's kind and decoder looked up again for every value) was 29% of the stack's samples on the busy-address
// phase; a mapper made once per shape (prepared.ts) took the stack's CPU per 50-event page from 1,049 to 737 µs
// (1,000,000 rows). The reads select only the 11 columns of an event's view (deliverer/db/event-pages.ts eventViewColumns), not
// the stored row's 22. Recover runs in batches of 100 with a short rest after each (deliverer/operations.ts: what batch
// sizes and rests cost a 100,000-event recover at 1,000,000 rows).
import { cpus, loadavg } from "node:os";
import { SQL } from "bun";
import { setLogLevel } from "../common/logger.ts";
import { isTxId } from "../common/event-search.ts";
import { hexToBase58, isBase58Address } from "../common/tron-address.ts";
import { startStack } from "../test/support/stack.ts";
import { allocatorNote } from "./cpu.ts";
import { getPhase, Wrk, type WrkResult } from "./wrk.ts";

/** wrk's connections (a closed loop: each sends its next request when the last is answered) and threads. */
const CONNECTIONS = 16;
const THREADS = 2;
const WARMUP_SECONDS = 3;
const RECOVER_EVENTS = 100_000;
const DAY = 86_400_000;
const SPAN_DAYS = 29;
/** Distinct "from" addresses (prime, so g % n does not follow the 1-in-100 share of the benchmark key). */
const RARE_ADDRESSES = 1_000_003;
const HOT_ADDRESSES = 10;
/** Pool rows per INSERT: each statement carries its chunk as one text parameter. */
const POOL_CHUNK = 100_000;

/** The i-th valid base58check address of a series (a 21-byte 0x41 payload counting up from `series`). */
function benchAddress(series: number, i: number): string {
  return hexToBase58(`41${series.toString(16).padStart(8, "0")}${i.toString(16).padStart(32, "0")}`);
}

/**
 * A table of `size` valid addresses (n → address), made in JS with the project's codec and loaded in chunks of one
 * text parameter each: the API checks the addresses it is queried with (GET /v1/events answers invalid_address to
 * anything else), so the rows it finds must carry real ones. About 3 µs an address (measured 2026-11-24).
 */
async function loadAddressPool(db: SQL, size: number): Promise<void> {
  await db.unsafe("CREATE TABLE bench_addresses (n int PRIMARY KEY, address text NOT NULL)");
  for (let lo = 0; lo < size; lo += POOL_CHUNK) {
    const chunk: string[] = [];
    for (let i = lo; i < Math.min(size, lo + POOL_CHUNK); i++) chunk.push(benchAddress(1, i));
    await db.unsafe(
      `INSERT INTO bench_addresses (n, address) SELECT ${lo} + o::int - 1, a FROM unnest(string_to_array($1, ',')) WITH ORDINALITY AS u(a, o)`,
      [chunk.join(",")],
    );
  }
  await db.unsafe("ANALYZE bench_addresses");
}

let postgresPids: () => Promise<number[]> = async () => [];
const wrk = new Wrk({ threads: THREADS, connections: CONNECTIONS, postgresPids: () => postgresPids() });

function line(label: string, r: WrkResult, target = ""): string {
  const per = (s: number) => `${r.requests === 0 ? 0 : Math.round((s * 1e6) / r.requests)} µs`;
  const cpu = `CPU/req: stack ${per(r.cpu.stack)}, PostgreSQL ${per(r.cpu.postgres)}, wrk ${per(r.cpu.wrk)}`;
  const errors = `${r.errors} errors${r.socketErrors ? ` (${r.socketErrors})` : ""}`;
  return `${label.padEnd(44)} p50 ${r.p50Ms.toFixed(1).padStart(6)} ms   p99 ${r.p99Ms.toFixed(1).padStart(6)} ms   ${Math.round(r.rps)} req/s, ${errors}   ${cpu}   ${target}`;
}

/**
 * A ULID in SQL: 10 Crockford base32 characters of the time in ms, then 16 of a per-row number (unique, not random).
 * One expression with no FROM, so PostgreSQL inlines it instead of calling a function per row.
 */
const ULID_FUNCTION = `
CREATE FUNCTION bench_ulid(ms bigint, n bigint) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((ms >> 45) & 31)::int + 1, 1) || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((ms >> 40) & 31)::int + 1, 1) || 
    substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((ms >> 35) & 31)::int + 1, 1) || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((ms >> 30) & 31)::int + 1, 1) || 
    substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((ms >> 25) & 31)::int + 1, 1) || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((ms >> 20) & 31)::int + 1, 1) || 
    substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((ms >> 15) & 31)::int + 1, 1) || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((ms >> 10) & 31)::int + 1, 1) || 
    substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((ms >> 5) & 31)::int + 1, 1) || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((ms >> 0) & 31)::int + 1, 1) || 
    '0' || '0' || 
    '0' || '0' || 
    '0' || '0' || 
    substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((n >> 45) & 31)::int + 1, 1) || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((n >> 40) & 31)::int + 1, 1) || 
    substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((n >> 35) & 31)::int + 1, 1) || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((n >> 30) & 31)::int + 1, 1) || 
    substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((n >> 25) & 31)::int + 1, 1) || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((n >> 20) & 31)::int + 1, 1) || 
    substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((n >> 15) & 31)::int + 1, 1) || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((n >> 10) & 31)::int + 1, 1) || 
    substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((n >> 5) & 31)::int + 1, 1) || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((n >> 0) & 31)::int + 1, 1)
$$`;

export default async function main(): Promise<void> {
  setLogLevel("warn");
  const total = Number(process.env.BENCH_EVENTS ?? 10_000_000);
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  console.log(`events bench: ${total} events over ${SPAN_DAYS} days; ${cpus().length} cores, load ${loadavg()[0]!.toFixed(1)} (a shared machine); ${allocatorNote()}`);
  // No deliveries in a benchmark: the deliverer serves its RPCs without a worker.
  const stack = await startStack({ deliverer: { startWorker: false }, env: { RATE_LIMIT_RPS: "1000000", RATE_LIMIT_BURST: "1000000" } });
  // 100,000 at 10,000,000 events; a smaller run recovers what its 1 % share holds.
  // BENCH_RECOVER_EVENTS sets it apart from the table's size (e.g. 100,000 in a table of 1,000,000 that loads fast).
  const recoverEvents = process.env.BENCH_RECOVER_EVENTS ? Number(process.env.BENCH_RECOVER_EVENTS) : Math.min(RECOVER_EVENTS, Math.floor(total / 100));
  const db = new SQL(stack.database.url, { max: 2 });
  postgresPids = async () =>
    ((await db`SELECT pid FROM pg_stat_activity WHERE datname = ${stack.database.name}`) as { pid: number }[]).map((r) => r.pid);
  try {
    const { key, id: keyId } = await stack.createKey();
    const auth = { authorization: `Bearer ${key}` };
    const subscribe = async () => {
      const created = await fetch(`${stack.baseUrl}/v1/subscriptions`, {
        method: "POST", headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ destination: { type: "https", url: "https://hooks.example.com/webhooks" }, events: ["wallet.transfer.broadcasted"] }),
      });
      return ((await created.json()) as { id: string }).id;
    };
    const sub = await subscribe();
    const recSub = await subscribe();

    const started = performance.now();
    const now = Date.now();
    const stepMs = Math.max(1, Math.floor((SPAN_DAYS * DAY) / total));
    const startMs = now - total * stepMs;
    await db.unsafe(ULID_FUNCTION);
    const poolSize = Math.min(RARE_ADDRESSES, total);
    const poolAt = performance.now();
    await loadAddressPool(db, poolSize);
    const poolMs = performance.now() - poolAt;
    const hot = Array.from({ length: HOT_ADDRESSES }, (_, i) => `'${benchAddress(2, i)}'`).join(", ");
    await db.unsafe("SET maintenance_work_mem = '256MB'");
    const timing = { insert: 0, attach: 0 };
    // The search refs (event_addresses, event_tx_refs) have no partitions to attach: their page indexes are dropped
    // for the load and built again after it, in one sorted pass (their primary keys lead with created_at, so the rows,
    // written in time order, append to them).
    const refIndexes = ((await db`SELECT indexname, indexdef FROM pg_indexes
      WHERE tablename IN ('event_addresses', 'event_tx_refs') AND indexname NOT LIKE '%_pkey'`) as { indexname: string; indexdef: string }[]);
    for (const { indexname } of refIndexes) await db.unsafe(`DROP INDEX "${indexname}"`);
    for (let dayStart = Math.floor(startMs / DAY) * DAY; dayStart <= now; dayStart += DAY) {
      const lo = Math.max(1, Math.ceil((dayStart - startMs) / stepMs));
      const hi = Math.min(total, Math.ceil((dayStart + DAY - startMs) / stepMs) - 1);
      if (hi < lo) continue;
      const day = new Date(dayStart).toISOString().slice(0, 10);
      const suffix = day.replaceAll("-", "");
      const bounds = `FROM ('${day} 00:00:00+00') TO ('${new Date(dayStart + DAY).toISOString().slice(0, 10)} 00:00:00+00')`;
      // The deliverer made today's partition already (empty): it is replaced by the loaded one.
      await db.unsafe(`DROP TABLE IF EXISTS events_p${suffix}, event_deliveries_p${suffix}`);
      await db.unsafe(`CREATE TABLE events_p${suffix} (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
      await db.unsafe(`CREATE TABLE event_deliveries_p${suffix} (LIKE event_deliveries INCLUDING DEFAULTS)`);
      await db.unsafe(`
        INSERT INTO events_p${suffix} (id, subscription_id, key_id, addresses, kind, chain_id, tx_id, log_index, payload, created_at, seq)
        SELECT tt.id, s.sub, s.key, s.addrs, 'wallet.transfer.broadcasted', 'tron:mainnet', tt.tx, -1,
          jsonb_build_object('id', tt.id, 'kind', 'wallet.transfer.broadcasted', 'date', to_timestamp(t / 1000.0),
            'data', jsonb_build_object('chainId', 'tron:mainnet', 'txId', tt.tx, 'blockNumber', 60000000 + g / 10,
              'from', s.addrs[1], 'to', s.addrs[2], 'amount', (g * 1000)::text, 'asset', jsonb_build_object('type', 'trx', 'decimals', 6)))::text,
          to_timestamp(t / 1000.0), g
        FROM generate_series(${lo}::bigint, ${hi}::bigint) g,
          -- A txId is 64 hex digits, as the API requires of the ones it is queried with.
          LATERAL (SELECT ${startMs}::bigint + g * ${stepMs} AS t, 'evt_' || bench_ulid(${startMs}::bigint + g * ${stepMs}, g) AS id,
            md5(g::text) || md5((-g)::text) AS tx) tt,
          LATERAL (SELECT
            CASE WHEN g > ${total - recoverEvents} THEN '${recSub}' WHEN g % 100 = 0 THEN '${sub}' ELSE 'sub_O' || (g % 1000) END AS sub,
            CASE WHEN g > ${total - recoverEvents} OR g % 100 = 0 THEN '${keyId}' ELSE 'key_O' || (g % 999) END AS key,
            -- "from" is one of ${RARE_ADDRESSES} valid addresses (about 10 events each at 10,000,000); the benchmark
            -- key's "to" one of 10 valid busy addresses (about 10,000 events each). The other keys' "to" is a unique
            -- placeholder no query asks for (one per row: too many to make real ones cheaply). The pool is read by a
            -- scalar subquery (one primary-key probe a row) rather than a join, which may hash and so reorder the
            -- rows: written in g order, each partition's heap stays in created_at order, as a live one is.
            ARRAY[(SELECT address FROM bench_addresses WHERE n = g % ${poolSize}), CASE WHEN g % 100 = 0 THEN (ARRAY[${hot}])[(g / 100 % 10) + 1] ELSE 'TT' || g END] AS addrs) s`);
      // The recover subscription's events failed; every other one was delivered.
      await db.unsafe(`INSERT INTO event_deliveries_p${suffix} (event_id, created_at, subscription_id, key_id, status, updated_at)
        SELECT e.id, e.created_at, e.subscription_id, e.key_id, CASE WHEN e.subscription_id = '${recSub}' THEN 'failed' ELSE 'delivered' END, e.created_at
        FROM events_p${suffix} e`);
      await db.unsafe(`INSERT INTO event_addresses (key_id, address, created_at, event_id)
        SELECT e.key_id, a, e.created_at, e.id FROM events_p${suffix} e, unnest(e.addresses) a ORDER BY e.created_at, e.id, a`);
      await db.unsafe(`INSERT INTO event_tx_refs (key_id, tx_id, created_at, event_id)
        SELECT e.key_id, e.tx_id, e.created_at, e.id FROM events_p${suffix} e ORDER BY e.created_at, e.id`);
      const attachAt = performance.now();
      await db.unsafe(`ALTER TABLE events ATTACH PARTITION events_p${suffix} FOR VALUES ${bounds}`);
      await db.unsafe(`ALTER TABLE event_deliveries ATTACH PARTITION event_deliveries_p${suffix} FOR VALUES ${bounds}`);
      timing.attach += performance.now() - attachAt;
    }
    const indexAt = performance.now();
    for (const { indexdef } of refIndexes) await db.unsafe(indexdef);
    timing.attach += performance.now() - indexAt;
    timing.insert = performance.now() - started - timing.attach;
    await db.unsafe(`SELECT setval(pg_get_serial_sequence('events', 'seq'), ${total + 1}, false)`);
    // What autovacuum does to a day's partition once it stops changing: statistics, and the visibility map that lets
    // an index-only scan skip the heap.
    await db.unsafe("VACUUM ANALYZE events");
    await db.unsafe("VACUUM ANALYZE event_deliveries");
    await db.unsafe("VACUUM ANALYZE event_addresses");
    await db.unsafe("VACUUM ANALYZE event_tx_refs");
    const [{ n, parts }] = (await db`SELECT count(*)::int AS n, count(DISTINCT tableoid)::int AS parts FROM events`) as [{ n: number; parts: number }];
    console.log(`generated ${n} events in ${parts} daily partitions in ${((performance.now() - started) / 1000).toFixed(1)} s (address pool of ${poolSize} ${(poolMs / 1000).toFixed(1)} s, rows ${((timing.insert - poolMs) / 1000).toFixed(1)} s, ATTACH and index builds ${(timing.attach / 1000).toFixed(1)} s)`);

    const [probe] = (await db`SELECT id, tx_id, addresses[1] AS addr, addresses[2] AS hot FROM events WHERE subscription_id = ${sub}
      ORDER BY created_at DESC LIMIT 1 OFFSET ${Math.floor(total / 100 / 20)}`) as { id: string; tx_id: string; addr: string; hot: string }[];
    if (!probe) throw new Error("probe event not found");
    // The API answers 400 to a malformed filter: a probe it would refuse measures the error path, not the search.
    if (!isTxId(probe.tx_id) || !isBase58Address(probe.addr) || !isBase58Address(probe.hot)) throw new Error(`probe values not valid: ${JSON.stringify(probe)}`);
    const searches = { txId: { keyId, txId: probe.tx_id }, address: { keyId, address: probe.addr }, busyAddress: { keyId, address: probe.hot } };
    for (const [name, q] of Object.entries(searches)) {
      const plan: string[] = [];
      for (const { sql: text, params } of stack.deliverer!.store.searchSql(q, 50, undefined)) {
        // The second run is the one shown: the first reads the pages into the cache.
        await db.unsafe(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params as never[]);
        plan.push(...((await db.unsafe(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params as never[])) as { "QUERY PLAN": string }[]).map((r) => r["QUERY PLAN"]));
      }
      if (process.env.BENCH_PLANS) console.log(plan.join("\n"));
      const scans = new Set(
        plan.map((l) => /(?:->\s+|^\s*)(Sort|Incremental Sort|Merge Append|Nested Loop|Index Only Scan|Index Scan|Bitmap Heap Scan|Seq Scan on \S+)/.exec(l)?.[1]).filter(Boolean),
      );
      console.log(`EXPLAIN ANALYZE ${name}: ${[...scans].join(", ")}; ${plan.filter((l) => /Execution Time|Planning Time/.test(l)).map((l) => l.trim()).join(", ")}`);
    }

    const spec = (path: string) => getPhase(stack.baseUrl + path, auth.authorization);
    // BENCH_PHASES=pk,txId,address,busy,page,recover runs only those (to profile one path with bun --cpu-prof).
    const only = process.env.BENCH_PHASES?.split(",");
    const phase = async (name: string, label: string, path: string, target = ""): Promise<WrkResult | undefined> => {
      if (only && !only.includes(name)) return undefined;
      const r = await wrk.measure(spec(path), seconds, WARMUP_SECONDS);
      console.log(line(label, r, target));
      return r;
    };
    await phase("pk", "GET one event (primary key), baseline", `/v1/subscriptions/${sub}/events/${probe.id}`);
    const byTx = await phase("txId", "GET /v1/events?txId=", `/v1/events?txId=${probe.tx_id}`, "target p99 ≤ 20 ms");
    await phase("address", "GET /v1/events?address= (a rare address)", `/v1/events?address=${probe.addr}&limit=50`, "target p99 ≤ 20 ms");
    await phase("busy", "GET /v1/events?address= (10,000 events)", `/v1/events?address=${probe.hot}&limit=50`, "target p99 ≤ 20 ms");
    // A full page of 50 events costs more to carry than one: the same page size without the address filter.
    await phase("page", "GET …/events?limit=50 (a 50-event page), baseline", `/v1/subscriptions/${sub}/events?limit=50`);

    if (!only || only.includes("recover")) {
      const since = new Date(Date.now() - 13 * DAY).toISOString();
      const during = wrk.run(spec(`/v1/events?txId=${probe.tx_id}`), seconds);
      const t0 = performance.now();
      const rec = await fetch(`${stack.baseUrl}/v1/subscriptions/${recSub}/events/recover`, {
        method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ since }),
      });
      const recoverMs = performance.now() - t0;
      const busy = await during;
      console.log(`recover: ${rec.status} ${JSON.stringify(await rec.json())} in ${(recoverMs / 1000).toFixed(1)} s   target ≤ 30 s for 100000 (this run: ${recoverEvents} failed)`);
      const idle = byTx ? `idle p99 ${byTx.p99Ms.toFixed(1)} ms; ` : "";
      console.log(line("GET /v1/events?txId= during recover", busy, `${idle}target ≤ 2× idle (the load ran ${seconds} s, recover ${(recoverMs / 1000).toFixed(1)} s)`));
    }
  } finally {
    wrk.close();
    await db.close();
    await stack.stop();
  }
}
