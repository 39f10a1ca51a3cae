// Redis down while index changes commit: PostgreSQL takes them (docs/CONTRACT.md "HTTP conventions": a write PostgreSQL
// accepted succeeds even if Redis is down), their outbox rows wait in PostgreSQL (registry/watch-index/outbox.ts), and once
// Redis is back the applier writes them in order: the index converges without a rebuild. The Redis is this test's own
// redis-server on a free port, shut down (saving its data, as a restarted server with persistence would come back)
// and started again; never the shared one. Real PostgreSQL (test/support/stack.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL, type Subprocess } from "bun";
import Redis from "ioredis";
import fixtures from "../../../fixtures/tron/addresses.json";
import { readState } from "../../../common/watch-index/generations.ts";
import { lookup, watchIndexHandle } from "../../../common/watch-index/reader.ts";
import { freePorts } from "../../support/ports.ts";
import { startStack, TEST_DESTINATION, type Stack, type TestKey } from "../../support/stack.ts";
import { until } from "../../support/wait.ts";
import { actualIndex, expectedIndex, waitUntilReady } from "../../support/watch-index.ts";

const MAINNET = "tron:mainnet";
const VALID = fixtures.valid as string[];

const [PORT] = freePorts(1) as [number];
const DIR = mkdtempSync(join(tmpdir(), "wi-outage-"));
let server: Subprocess | undefined;

async function startRedis(): Promise<void> {
  server = Bun.spawn(
    ["redis-server", "--port", String(PORT), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", DIR, "--dbfilename", "wi.rdb"],
    { stdout: "ignore", stderr: "ignore" },
  );
  await until("redis-server answers", async () => {
    const probe = new Redis(PORT, "127.0.0.1", { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on("error", () => {});
    try {
      await probe.connect();
      return (await probe.ping()) === "PONG";
    } catch {
      return false;
    } finally {
      probe.disconnect();
    }
  }, 10_000, 25);
}

/** Stops the server, keeping its data on disk (SHUTDOWN SAVE), as a restart of a persistent Redis would. */
async function stopRedis(): Promise<void> {
  const admin = new Redis(PORT, "127.0.0.1", { maxRetriesPerRequest: 0, retryStrategy: () => null });
  admin.on("error", () => {});
  await admin.call("SHUTDOWN", "SAVE").catch(() => {});
  admin.disconnect();
  await server?.exited;
}

let stack: Stack;
let key: TestKey;
let sql: SQL;
let direct: Redis;

beforeAll(async () => {
  await startRedis();
  stack = await startStack({ env: { REDIS_URL: `redis://127.0.0.1:${PORT}/0` } });
  key = await stack.createKey();
  sql = new SQL(stack.database.url, { max: 2 });
  direct = new Redis(PORT, "127.0.0.1");
  direct.on("error", () => {});
}, 60_000);

afterAll(async () => {
  direct?.disconnect();
  await sql?.close();
  await stack?.stop();
  if (server && server.exitCode === null) server.kill("SIGKILL");
  await server?.exited;
  rmSync(DIR, { recursive: true, force: true });
}, 60_000);

async function api(method: string, path: string, body?: unknown) {
  const res = await fetch(stack.baseUrl + path, {
    method,
    headers: { authorization: `Bearer ${key.key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : null };
}

const entries = (list: string[]) => list.map((address) => ({ chainId: MAINNET, address }));

describe("Redis down while changes commit", () => {
  test("the changes commit, wait in the outbox, and are applied in order once Redis is back (no rebuild)", async () => {
    const [a, b, c, d, e] = VALID as [string, string, string, string, string];
    const created = await api("POST", "/v1/subscriptions", { destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.broadcasted"] });
    const id = created.body!.id as string;
    expect((await api("PATCH", `/v1/subscriptions/${id}/filters/addresses`, { add: entries([a, b, c]) })).status).toBe(200);
    await waitUntilReady(direct, stack.config.redisPrefix);
    const mainnet = watchIndexHandle(direct, { prefix: stack.config.redisPrefix, chainId: MAINNET });
    const before = await readState(mainnet);

    await stopRedis();
    const t0 = Date.now();
    // Three changes of one subscription whose order matters: add d and drop a, then drop d again and add e, then
    // disable the subscription.
    const first = await api("PATCH", `/v1/subscriptions/${id}/filters/addresses`, { add: entries([d]), remove: entries([a]) });
    const second = await api("PATCH", `/v1/subscriptions/${id}/filters/addresses`, { add: entries([e]), remove: entries([d]) });
    const third = await api("PUT", `/v1/subscriptions/${id}`, { destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.broadcasted"], status: "disabled" });
    expect([first.status, second.status, third.status]).toEqual([200, 200, 200]);
    // Each answered once its applier failed, not after the whole wait bound.
    expect(Date.now() - t0).toBeLessThan(3 * 3_000);
    const waiting = (await sql`SELECT kind FROM watch_outbox WHERE applied_position IS NULL ORDER BY id`) as { kind: string }[];
    expect(waiting.map((r) => r.kind)).toEqual(["addresses", "addresses", "meta", "meta", "meta"]);

    await startRedis();
    await until("the outbox was applied", async () => ((await sql`SELECT 1 FROM watch_outbox WHERE applied_position IS NULL`) as unknown[]).length === 0, 20_000, 50);
    const found = await lookup(mainnet, [a, b, c, d, e], { includeInactive: true });
    expect([...found.keys()].sort()).toEqual([b, c, e].sort());
    expect(found.get(e)!.map((w) => [w.subscriptionId, w.active])).toEqual([[id, false]]);
    expect(await actualIndex(direct, stack.config.redisPrefix)).toEqual(await expectedIndex(sql));
    // Applied on top of the generation Redis kept: no rebuild was needed.
    expect((await readState(mainnet)).cur).toBe(before.cur);
  }, 90_000);
});
