// Delivery operations through the HTTP API (attempts, recover, GET /v1/events, health) and the same RPCs over
// Connect on the deliverer's served port. Real registry, deliverer, PostgreSQL, Redis and HTTPS receiver.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { createClient } from "@connectrpc/connect";
import { networkTransport } from "../../../common/rpc.ts";
import { fromRpcError } from "../../../common/rpc-errors.ts";
import { RECOVER_BATCH } from "../../../deliverer/operations.ts";
import { DeliveryService } from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { call, startEventsStack, type EventsStack } from "../../support/events.ts";

type Ev = { id: string; subscriptionId: string; kind: string; chainId: string | null; status: string; payload: { data: Record<string, unknown> } };
type Att = { id: string; date: string; durationMs: number; responseStatus: number | null; responseBody: string | null; error: string | null; trigger: string };
type Page<T> = { items: T[]; nextPageToken?: string };
type Err = { error: string; detail: { param?: string } | null };

let env: EventsStack;
let base: string;
let db: SQL;

beforeAll(async () => {
  env = await startEventsStack({ env: { RETRY_SCHEDULE: "0,20ms,20ms" } });
  base = env.stack.baseUrl;
  db = new SQL(env.stack.database.url, { max: 2 });
}, 60_000);

afterAll(async () => {
  await db?.close();
  await env?.stop();
}, 60_000);

async function setup(path: string) {
  const { key, id: keyId } = await env.stack.createKey();
  const created = await call<{ id: string; destination: { secret: string } }>(base, key, "POST", "/v1/subscriptions", {
    destination: { type: "https", url: env.receiver.url(path) },
    events: ["wallet.transfer.broadcasted"],
  });
  expect(created.status).toBe(201);
  env.receiver.setSecrets(path, [created.body.destination.secret]);
  return { key, keyId, id: created.body.id };
}

async function settled(key: string, subId: string, eventId: string, status: string): Promise<Ev> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res = await call<Ev>(base, key, "GET", `/v1/subscriptions/${subId}/events/${eventId}`);
    if (res.body.status === status) return res.body;
    if (Date.now() > deadline) throw new Error(`event not ${status}: ${JSON.stringify(res.body)}`);
    await Bun.sleep(25);
  }
}

describe("attempts", () => {
  test("every attempt recorded, newest first; automatic then manual after a retry", async () => {
    const s = await setup("/op-att");
    // The reset twice: an attempt cut before any answer is sent once more at once on a new connection.
    env.receiver.setBehaviour("/op-att", { kind: "sequence", steps: [{ kind: "status", status: 500, body: "boom" }, { kind: "reset" }, { kind: "reset" }, { kind: "status", status: 503 }, { kind: "ok" }] });
    const ev = (await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`)).body;
    await settled(s.key, s.id, ev.id, "failed");
    const res = await call<Page<Att>>(base, s.key, "GET", `/v1/subscriptions/${s.id}/events/${ev.id}/attempts`);
    expect(res.status).toBe(200);
    expect(res.body.items).toHaveLength(3);
    const [third, second, first] = res.body.items;
    expect(first).toMatchObject({ responseStatus: 500, responseBody: "boom", error: null, trigger: "automatic" });
    expect(second).toMatchObject({ responseStatus: null, responseBody: null, trigger: "automatic" });
    expect(second!.error).toEqual(expect.any(String));
    expect(third).toMatchObject({ responseStatus: 503, trigger: "automatic" });
    for (const a of res.body.items) {
      expect(a.id).toMatch(/^att_[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(new Date(a.date).toISOString()).toBe(a.date);
      expect(a.durationMs).toBeGreaterThanOrEqual(0);
    }
    expect(new Date(first!.date).getTime()).toBeLessThanOrEqual(new Date(third!.date).getTime());

    expect((await call(base, s.key, "POST", `/v1/subscriptions/${s.id}/events/${ev.id}/retry`)).status).toBe(200);
    await settled(s.key, s.id, ev.id, "delivered");
    const after = await call<Page<Att>>(base, s.key, "GET", `/v1/subscriptions/${s.id}/events/${ev.id}/attempts?limit=2`);
    expect(after.body.items[0]).toMatchObject({ responseStatus: 200, responseBody: "ok", trigger: "manual" });
    expect(after.body.nextPageToken).toStartWith("v1:");
    const next = await call<Page<Att>>(base, s.key, "GET", `/v1/subscriptions/${s.id}/events/${ev.id}/attempts?limit=2&nextPageToken=${encodeURIComponent(after.body.nextPageToken!)}`);
    expect(next.body.items.map((a) => a.id)).toEqual(res.body.items.slice(1).map((a) => a.id));
    expect(next.body.nextPageToken).toBeUndefined();
  });

  test("a foreign key, a foreign event or a malformed id is not_found; attempts go with the subscription", async () => {
    const s = await setup("/op-att-sec");
    const other = await setup("/op-att-sec2");
    const ev = (await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`)).body;
    await settled(s.key, s.id, ev.id, "delivered");
    expect((await call<Err>(base, other.key, "GET", `/v1/subscriptions/${s.id}/events/${ev.id}/attempts`)).body.error).toBe("not_found");
    const wrongParent = await call<Err>(base, other.key, "GET", `/v1/subscriptions/${other.id}/events/${ev.id}/attempts`);
    expect([wrongParent.status, wrongParent.body.error]).toEqual([404, "not_found"]);
    expect((await call<Err>(base, s.key, "GET", `/v1/subscriptions/${s.id}/events/evt_nope/attempts`)).status).toBe(404);
    const bad = await call<Err>(base, s.key, "GET", `/v1/subscriptions/${s.id}/events/${ev.id}/attempts?nextPageToken=v1:forged.sig`);
    expect([bad.status, bad.body.error]).toEqual([400, "invalid_pagination_token"]);
    expect((await call(base, s.key, "DELETE", `/v1/subscriptions/${s.id}`)).status).toBe(204);
    const [row] = (await db`SELECT count(*)::int AS n FROM delivery_attempts WHERE event_id = ${ev.id}`) as { n: number }[];
    expect(row!.n).toBe(0);
  });
});

describe("recover", () => {
  test("re-queues every failed event since a time, once; 202 {recovered}; Idempotency-Key replays", async () => {
    const s = await setup("/op-rec");
    env.receiver.setBehaviour("/op-rec", { kind: "status", status: 500 });
    const since = new Date(Date.now() - 1_000).toISOString();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`)).body.id);
    for (const id of ids) await settled(s.key, s.id, id, "failed");
    env.receiver.setBehaviour("/op-rec", { kind: "ok" });
    const headers = { "idempotency-key": "rec-1" };
    const res = await call<{ recovered: number }>(base, s.key, "POST", `/v1/subscriptions/${s.id}/events/recover`, { since }, headers);
    expect([res.status, res.body]).toEqual([202, { recovered: 3 }]);
    for (const id of ids) await settled(s.key, s.id, id, "delivered");
    const atts = await call<Page<Att>>(base, s.key, "GET", `/v1/subscriptions/${s.id}/events/${ids[0]}/attempts`);
    expect(atts.body.items[0]).toMatchObject({ responseStatus: 200, trigger: "manual" });
    const replay = await call<{ recovered: number }>(base, s.key, "POST", `/v1/subscriptions/${s.id}/events/recover`, { since }, headers);
    expect([replay.status, replay.body, replay.headers.get("idempotent-replayed")]).toEqual([202, { recovered: 3 }, "true"]);
    // Nothing failed is left: a second recover finds none.
    const again = await call<{ recovered: number }>(base, s.key, "POST", `/v1/subscriptions/${s.id}/events/recover`, { since });
    expect(again.body).toEqual({ recovered: 0 });
    // status delivered re-sends them; a window before them finds none.
    const delivered = await call<{ recovered: number }>(base, s.key, "POST", `/v1/subscriptions/${s.id}/events/recover`, { since, status: "delivered" });
    expect(delivered.body).toEqual({ recovered: 3 });
    const before = await call<{ recovered: number }>(base, s.key, "POST", `/v1/subscriptions/${s.id}/events/recover`, { since: new Date(Date.now() - 3_600_000).toISOString(), until: since });
    expect(before.body).toEqual({ recovered: 0 });
  });

  test("more events than one batch: every one re-queued exactly once across the paced batches", async () => {
    const s = await setup("/op-rec-many");
    env.receiver.setBehaviour("/op-rec-many", { kind: "status", status: 500 });
    const since = new Date(Date.now() - 1_000).toISOString();
    const n = RECOVER_BATCH + 7;
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`)).body.id);
    for (const id of ids) await settled(s.key, s.id, id, "failed");
    // The receiver keeps failing, so an event re-queued by an early batch may be failed again before a later batch
    // runs: the keyset walk must not take it a second time (recovered would exceed n).
    const res = await call<{ recovered: number }>(base, s.key, "POST", `/v1/subscriptions/${s.id}/events/recover`, { since });
    expect([res.status, res.body]).toEqual([202, { recovered: n }]);
    for (const id of ids) await settled(s.key, s.id, id, "failed");
    const [manual] = (await db`SELECT count(DISTINCT event_id)::int AS n FROM delivery_attempts
      WHERE subscription_id = ${s.id} AND trigger = 'manual'`) as { n: number }[];
    expect(manual!.n).toBe(n);
  }, 120_000);

  test("bad bodies are invalid_request with param; a disabled subscription is 409; a foreign key 404", async () => {
    const s = await setup("/op-rec-err");
    const other = await setup("/op-rec-err2");
    const path = `/v1/subscriptions/${s.id}/events/recover`;
    const cases: [unknown, string][] = [
      [{}, "/since"],
      [{ since: "yesterday" }, "/since"],
      [{ since: 12 }, "/since"],
      [{ since: new Date(Date.now() - 15 * 86_400_000).toISOString() }, "/since"],
      [{ since: new Date().toISOString(), until: "x" }, "/until"],
      [{ since: new Date(Date.now() - 1000).toISOString(), status: "pending" }, "/status"],
      // A since in the future with until left to default names since, not the until nobody sent.
      [{ since: new Date(Date.now() + 3_600_000).toISOString() }, "/since"],
    ];
    for (const [body, param] of cases) {
      const res = await call<Err>(base, s.key, "POST", path, body);
      expect([res.status, res.body.error, res.body.detail?.param]).toEqual([400, "invalid_request", param]);
    }
    const pending = await call<{ message: string }>(base, s.key, "POST", path, { since: new Date(Date.now() - 1000).toISOString(), status: "pending" });
    expect(pending.body.message).toBe("The field /status must be one of failed, delivered.");
    const since = new Date(Date.now() - 1_000).toISOString();
    expect((await call<Err>(base, other.key, "POST", path, { since })).body.error).toBe("not_found");
    expect((await call(base, s.key, "PUT", `/v1/subscriptions/${s.id}`, {
      destination: { type: "https", url: env.receiver.url("/op-rec-err") }, events: ["wallet.transfer.broadcasted"], status: "disabled",
    })).status).toBe(200);
    const disabled = await call<Err>(base, s.key, "POST", path, { since });
    expect([disabled.status, disabled.body.error]).toEqual([409, "subscription_disabled"]);
  });
});

describe("GET /v1/events", () => {
  test("across the key's subscriptions, each filter, paging; never another key's events", async () => {
    const a = await setup("/op-s1");
    const { id: b } = (await call<{ id: string }>(base, a.key, "POST", "/v1/subscriptions", {
      destination: { type: "https", url: env.receiver.url("/op-s2") }, events: ["wallet.transfer.broadcasted"],
    })).body;
    const stranger = await setup("/op-s3");
    const ping = (await call<Ev>(base, a.key, "POST", `/v1/subscriptions/${a.id}/test`)).body;
    const transfer = (await call<Ev>(base, a.key, "POST", `/v1/subscriptions/${b}/test`, { kind: "wallet.transfer.broadcasted" })).body;
    await call(base, stranger.key, "POST", `/v1/subscriptions/${stranger.id}/test`, { kind: "wallet.transfer.broadcasted" });
    const list = async (q: string) => (await call<Page<Ev>>(base, a.key, "GET", `/v1/events${q}`)).body.items.map((e) => e.id);
    expect(await list("")).toEqual([transfer.id, ping.id]);
    const data = transfer.payload.data as { txId: string; from: string; to: string };
    expect(await list(`?txId=${data.txId}`)).toEqual([transfer.id]);
    expect(await list(`?address=${data.from}`)).toEqual([transfer.id]);
    expect(await list(`?address=${data.to}`)).toEqual([transfer.id]);
    expect(await list(`?chainId=tron:mainnet`)).toEqual([transfer.id]);
    expect(await list(`?kind=service.ping`)).toEqual([ping.id]);
    expect(await list(`?subscriptionId=${a.id}`)).toEqual([ping.id]);
    expect(await list(`?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).toEqual([]);
    expect(await list(`?until=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}&status=failed`)).toEqual([]);
    const first = await call<Page<Ev>>(base, a.key, "GET", "/v1/events?limit=1");
    expect(first.body.items.map((e) => e.id)).toEqual([transfer.id]);
    const second = await call<Page<Ev>>(base, a.key, "GET", `/v1/events?limit=1&nextPageToken=${encodeURIComponent(first.body.nextPageToken!)}`);
    expect(second.body.items.map((e) => e.id)).toEqual([ping.id]);
    expect(second.body.nextPageToken).toBeUndefined();
    // A token of another filter set, or of another key, is invalid_pagination_token.
    const other = await call<Err>(base, a.key, "GET", `/v1/events?kind=service.ping&nextPageToken=${encodeURIComponent(first.body.nextPageToken!)}`);
    expect([other.status, other.body.error]).toEqual([400, "invalid_pagination_token"]);
    const foreign = await call<Err>(base, stranger.key, "GET", `/v1/events?nextPageToken=${encodeURIComponent(first.body.nextPageToken!)}`);
    expect(foreign.body.error).toBe("invalid_pagination_token");
    // Another key's subscription as a filter: not_found.
    expect((await call<Err>(base, stranger.key, "GET", `/v1/events?subscriptionId=${a.id}`)).body.error).toBe("not_found");
    const later = encodeURIComponent(new Date(Date.now() + 60_000).toISOString());
    for (const [q, param] of [["?since=soon", "since"], ["?status=lost", "status"], ["?limit=0", "limit"], ["?chainId=eth:1", "chainId"],
      // An unknown kind, and an until not after since, are mistakes, not empty results.
      ["?kind=wallet.transfer", "kind"], [`?since=${later}&until=${later}`, "until"]]) {
      const res = await call<Err>(base, a.key, "GET", `/v1/events${q}`);
      expect([q, res.status, res.body.error, res.body.detail?.param]).toEqual([q, 400, "invalid_request", param]);
    }
    // txId and address are checked like every other such input: a malformed one is an error, not an empty page.
    for (const txId of ["nothex", data.txId.slice(0, 32), `${data.txId}0`, `0x${data.txId.slice(2)}`, data.txId.replace(/^./, "g")]) {
      const res = await call<Err>(base, a.key, "GET", `/v1/events?txId=${txId}`);
      expect([txId, res.status, res.body.error, res.body.detail?.param]).toEqual([txId, 400, "invalid_request", "txId"]);
    }
    const hex = `41${"0".repeat(40)}`;
    // A wrong checksum (last character changed), the hex form, another length, white space.
    const wrongSum = data.from.slice(0, -1) + (data.from.endsWith("1") ? "2" : "1");
    for (const address of ["bogus", wrongSum, hex, data.from.slice(0, 33), ` ${data.from}`]) {
      const res = await call<Err>(base, a.key, "GET", `/v1/events?address=${encodeURIComponent(address)}`);
      expect([address, res.status, res.body.error, res.body.detail?.param]).toEqual([address, 400, "invalid_address", "address"]);
    }
    // An upper-case txId is the same transaction.
    expect(await list(`?txId=${data.txId.toUpperCase()}`)).toEqual([transfer.id]);
    expect((await call<Err>(base, undefined, "GET", "/v1/events")).status).toBe(401);
  });

  test("every filter is an index range in page order across daily partitions (EXPLAIN of the real statement)", async () => {
    const sql = db;
    const deliverer = env.stack.deliverer!;
    const day = 86_400_000;
    // 60,000 rows over 50 keys spread across 6 days, each day in its own partition: big enough that the planner's
    // honest choice shows, and every page may have to cross a partition boundary.
    await deliverer.partitions.ensure(new Date(Date.now() - 6 * day), new Date());
    await sql`INSERT INTO events (id, subscription_id, key_id, addresses, kind, chain_id, tx_id, log_index, payload, created_at)
      SELECT 'evt_X' || lpad(g::text, 25, '0'), 'sub_X' || (g % 500), 'key_X' || (g % 50),
        ARRAY['TA' || (g % 5000), 'TB' || g], CASE WHEN g % 3 = 0 THEN 'service.ping' ELSE 'wallet.transfer.confirmed' END,
        CASE g % 3 WHEN 0 THEN 'tron:mainnet' WHEN 1 THEN 'tron:nile' ELSE 'tron:shasta' END, md5(g::text) || md5(g::text), 0, '{}'::jsonb,
        now() - g * interval '8 seconds'
      FROM generate_series(1, 60000) g`;
    await sql`INSERT INTO event_deliveries (event_id, created_at, subscription_id, key_id, status, updated_at)
      SELECT e.id, e.created_at, e.subscription_id, e.key_id,
        CASE WHEN substr(e.id, 6)::int % 10 = 0 THEN 'failed' ELSE 'delivered' END, now()
      FROM events e WHERE e.id LIKE 'evt_X%'`;
    await sql`INSERT INTO event_addresses (key_id, address, created_at, event_id)
      SELECT e.key_id, a, e.created_at, e.id FROM events e, unnest(e.addresses) a WHERE e.id LIKE 'evt_X%'`;
    await sql`INSERT INTO event_tx_refs (key_id, tx_id, created_at, event_id)
      SELECT e.key_id, e.tx_id, e.created_at, e.id FROM events e WHERE e.id LIKE 'evt_X%'`;
    await sql`ANALYZE events`;
    await sql`ANALYZE event_deliveries`;
    await sql`ANALYZE event_addresses`;
    await sql`ANALYZE event_tx_refs`;
    const [{ parts }] = (await sql`SELECT count(DISTINCT tableoid)::int AS parts FROM events WHERE id LIKE 'evt_X%'`) as [{ parts: number }];
    expect(parts).toBeGreaterThanOrEqual(6);
    const now = Date.now();
    // A cursor two days back: the next page starts in an older partition than the newest.
    const cursor = { t: now - 2 * day, id: "evt_X" };
    const searches: Record<string, Parameters<typeof deliverer.store.searchSql>[0]> = {
      key: { keyId: "key_X7" },
      txId: { keyId: "key_X7", txId: "c4ca4238a0b923820dcc509a6f75849bc4ca4238a0b923820dcc509a6f75849b" },
      address: { keyId: "key_X7", address: "TA77" },
      chainId: { keyId: "key_X7", chainId: "tron:nile" },
      kind: { keyId: "key_X7", kind: "service.ping" },
      status: { keyId: "key_X7", status: "failed" },
      subscriptionId: { keyId: "key_X7", subscriptionId: "sub_X7" },
      since: { keyId: "key_X7", since: new Date(now - 3_600_000) },
      until: { keyId: "key_X7", until: new Date(now - day) },
    };
    // A test cannot hold 10,000,000 rows, and at 60,000 the planner honestly prefers sorting a key's 1,200 matches
    // (and scanning the empty future partitions). So it is asked whether a plan exists that reads a page in index
    // order: with sequential scans, bitmap scans and sorts priced out, a filter no index serves in page order still
    // shows a Seq Scan or a Sort. `bun run bench events` measures the same statements at 10,000,000 rows.
    const explain = (text: string, params: unknown[]) =>
      sql.begin(async (tx) => {
        await tx`SET LOCAL enable_seqscan = off`;
        await tx`SET LOCAL enable_bitmapscan = off`;
        await tx`SET LOCAL enable_sort = off`;
        return (await tx.unsafe(`EXPLAIN ${text}`, params as never[])) as { "QUERY PLAN": string }[];
      });
    for (const [name, q] of Object.entries(searches)) {
      // The next page starts inside the filter's range (for `since`, half an hour back).
      for (const after of [undefined, name === "since" ? { t: now - 1_800_000, id: "evt_X" } : cursor]) {
        const plans: string[] = [];
        for (const { sql: text, params } of deliverer.store.searchSql(q, 50, after)) {
          plans.push((await explain(text, params)).map((r) => r["QUERY PLAN"]).join("\n"));
        }
        const plan = plans.join("\n");
        const label = `${name}${after ? " (next page)" : ""}`;
        if (process.env.SHOW_PLANS) console.log(label, "\n", plan);
        // No sequential scan of any partition, and no sort of the matches: the page is read in index order. The
        // event and its delivery state are joined per row of the page (a nested loop probing by key), never by
        // reading one side whole for a hash or merge join.
        expect([label, /Seq Scan on (events|event_addresses|event_deliveries|event_tx_refs)/.test(plan), /\bSort\s+\(cost/.test(plan), /Hash Join|Merge Join/.test(plan)])
          .toEqual([label, false, false, false]);
        // The status lives in event_deliveries: the page is a range of that table's (key, status, …) index (bounded
        // by nothing but the key, the status and the cursor's time; not a probe by event id).
        const statusRange = /using \S*key_id_status\S* on event_deliveries_\S+ [^\n]*\n\s*Index Cond: \(\(key_id = 'key_X7'::text\) AND \(status = 'failed'::text\)(\)\n| AND \(created_at <= )/;
        if (name === "status") expect([label, statusRange.test(plan)]).toEqual([label, true]);
      }
    }
    await sql`DELETE FROM event_addresses WHERE event_id LIKE 'evt_X%'`;
    await sql`DELETE FROM event_tx_refs WHERE event_id LIKE 'evt_X%'`;
    await sql`DELETE FROM event_deliveries WHERE event_id LIKE 'evt_X%'`;
    await sql`DELETE FROM events WHERE id LIKE 'evt_X%'`;
  }, 180_000);
});

describe("health", () => {
  test("success rates, last success and failure, consecutive failures, durations, pending; foreign key 404", async () => {
    const s = await setup("/op-health");
    const empty = await call<Record<string, unknown>>(base, s.key, "GET", `/v1/subscriptions/${s.id}/health`);
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({
      lastHour: { attempts: 0, succeeded: 0, successRate: null }, lastSuccess: null, lastFailure: null,
      consecutiveFailures: 0, durationMs: { p50: null, p99: null }, pending: 0,
    });
    const ok = (await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`)).body;
    await settled(s.key, s.id, ok.id, "delivered");
    env.receiver.setBehaviour("/op-health", { kind: "status", status: 502 });
    const bad = (await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`)).body;
    await settled(s.key, s.id, bad.id, "failed");
    const h = await call<{
      lastHour: { attempts: number; succeeded: number; successRate: number }; last24Hours: { attempts: number };
      lastSuccess: string; lastFailure: { date: string; reason: string }; consecutiveFailures: number;
      durationMs: { p50: number; p99: number }; pending: number; hourlySuccessRate: (number | null)[];
    }>(base, s.key, "GET", `/v1/subscriptions/${s.id}/health`);
    expect(h.body.lastHour).toEqual({ attempts: 4, succeeded: 1, successRate: 0.25 });
    expect(h.body.last24Hours.attempts).toBe(4);
    expect(h.body.lastFailure.reason).toBe("HTTP 502");
    expect(new Date(h.body.lastSuccess).getTime()).toBeLessThanOrEqual(new Date(h.body.lastFailure.date).getTime());
    expect(h.body.consecutiveFailures).toBe(3);
    expect(h.body.durationMs.p99).toBeGreaterThanOrEqual(h.body.durationMs.p50);
    // Whole tenths of a millisecond, never an interpolation's float noise.
    for (const v of [h.body.durationMs.p50, h.body.durationMs.p99]) expect(Math.round(v * 10) / 10).toBe(v);
    expect(h.body.pending).toBe(0);
    expect(h.body.hourlySuccessRate).toHaveLength(24);
    expect(h.body.hourlySuccessRate[23]).toBe(0.25);
    const other = await setup("/op-health2");
    expect((await call<Err>(base, other.key, "GET", `/v1/subscriptions/${s.id}/health`)).status).toBe(404);
  });
});

describe("over Connect on the deliverer's port", () => {
  test("SearchEvents, ListAttempts, GetHealth and RecoverEvents answer with the internal token", async () => {
    const s = await setup("/op-rpc");
    const ev = (await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`)).body;
    await settled(s.key, s.id, ev.id, "delivered");
    const client = createClient(DeliveryService, networkTransport(env.stack.config.delivererUrl, { token: env.stack.config.internalToken }));
    const found = await client.searchEvents({ keyId: s.keyId, limit: 10 });
    expect(found.items.map((e) => e.id)).toEqual([ev.id]);
    const atts = await client.listAttempts({ keyId: s.keyId, subscriptionId: s.id, eventId: ev.id });
    expect(atts.items[0]?.responseStatus).toBe(200);
    const health = await client.getHealth({ keyId: s.keyId, subscriptionId: s.id });
    expect(health.lastHour?.succeeded).toBe(1n);
    const rec = await client.recoverEvents({ keyId: s.keyId, subscriptionId: s.id, sinceMs: BigInt(Date.now() - 60_000), status: "delivered" });
    expect(rec.recovered).toBe(1n);
    // The RPC is an API too: the same checks, the same codes in its ErrorInfo.
    for (const [q, code, param] of [[{ txId: "nothex" }, "invalid_request", "txId"], [{ address: "bogus" }, "invalid_address", "address"]] as const) {
      const err = await client.searchEvents({ keyId: s.keyId, ...q }).then(() => null, (e: unknown) => fromRpcError(e));
      expect([err?.code, err?.detail?.param]).toEqual([code, param]);
    }
    const unauth = createClient(DeliveryService, networkTransport(env.stack.config.delivererUrl, { token: "" }));
    expect(unauth.searchEvents({ keyId: s.keyId })).rejects.toThrow();
  });
});
