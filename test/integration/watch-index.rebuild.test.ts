// The watch index comes back from PostgreSQL: Redis emptied (FLUSHDB) while the service runs, an on-demand rebuild
// while writes continue, and a Redis outage during a write. Lookups made meanwhile never answer "not watched" for an
// address that is watched: while the index is not ready they wait (common/watch-index.ts), then answer in full.
// Real PostgreSQL and Redis (one server, and a real 3-master Redis Cluster for the first part); the outage goes through
// a TCP proxy in front of Redis that the test cuts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import net from "node:net";
import { createClient } from "@connectrpc/connect";
import { SQL } from "bun";
import Redis from "ioredis";
import fixtures from "../../fixtures/tron/addresses.json";
import { inProcessTransport } from "../../common/rpc.ts";
import { hexToBase58 } from "../../common/tron-address.ts";
import { beginBuild, lookup, readState } from "../../common/watch-index.ts";
import { WatchIndexService } from "../../gen/webhooks/registry/v1/registry_pb.ts";
import { allocateRedisDb, type TestRedis } from "../support/redis.ts";
import { REDIS_KINDS } from "../support/redis-cluster.ts";
import { startStack, TEST_DESTINATION, type Stack, type TestKey } from "../support/stack.ts";
import { actualIndex, expectedIndex, waitUntilReady } from "../support/watch-index.ts";

const MAINNET = "tron:mainnet";
const VALID = fixtures.valid as string[];
const generated = (n: number) => Array.from({ length: n }, () => hexToBase58("41" + randomBytes(20).toString("hex")));

/** A TCP proxy in front of Redis that can be cut (every connection dropped, new ones refused) and restored. */
function redisProxy(targetPort: number) {
  let up = true;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (!up) return client.destroy();
    const upstream = net.connect(targetPort, "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {});
    }
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  return {
    listen: () => new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port))),
    cut() {
      up = false;
      for (const s of sockets) s.destroy();
    },
    restore() {
      up = true;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function api(stack: Stack, k: TestKey, method: string, path: string, body?: unknown) {
  const res = await fetch(stack.baseUrl + path, {
    method,
    headers: { authorization: `Bearer ${k.key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : null };
}

async function subscribe(stack: Stack, k: TestKey, addresses: string[], status = "enabled", match?: unknown): Promise<string> {
  const created = await api(stack, k, "POST", "/v1/subscriptions", {
    destination: { type: "https", url: TEST_DESTINATION },
    events: ["wallet.transfer.broadcasted"],
    status,
    match,
  });
  expect(created.status).toBe(201);
  const id = created.body!.id as string;
  for (let i = 0; i < addresses.length; i += 5_000) {
    const res = await api(stack, k, "PATCH", `/v1/subscriptions/${id}/filters/addresses`, {
      add: addresses.slice(i, i + 5_000).map((address) => ({ chainId: MAINNET, address })),
    });
    expect(res.status).toBe(200);
  }
  return id;
}

describe.each(REDIS_KINDS)("Redis emptied or rebuilt while the service runs (Redis %s)", (redisKind) => {
  let stack: Stack;
  let key: TestKey;
  let sql: SQL;
  // Watched by enabled subscriptions: every lookup of them must name their watchers.
  const watched = new Map<string, string>();

  beforeAll(async () => {
    stack = await startStack({ redisKind });
    key = await stack.createKey();
    sql = new SQL(stack.database.url, { max: 2 });
    for (let s = 0; s < 4; s++) {
      const list = s === 0 ? [...VALID, ...generated(5_000)] : generated(5_000);
      // One subscription with match conditions: the rebuild must bring them back with the rest.
      const match = s === 1 ? { assets: [{ standard: "TRX", minAmount: "1000000" }], directions: ["outgoing"], includeZeroValue: true } : undefined;
      const id = await subscribe(stack, key, list, "enabled", match);
      for (const a of list) if (!watched.has(a)) watched.set(a, id);
    }
    await subscribe(stack, key, generated(2_000), "disabled");
  }, 120_000);

  afterAll(async () => {
    await sql?.close();
    await stack?.stop();
  }, 60_000);

  /** Looks up random blocks of watched addresses (plus unwatched ones) until stopped; returns what went wrong. */
  function lookupLoop(stopAt: () => boolean) {
    const all = [...watched.keys()];
    const problems: string[] = [];
    let lookups = 0;
    let slow = 0;
    const done = (async () => {
      while (!stopAt()) {
        const block = [...Array.from({ length: 300 }, () => all[Math.floor(Math.random() * all.length)]!), ...generated(20)];
        const t0 = performance.now();
        const found = await lookup(stack.registry.redis, stack.config.redisPrefix, MAINNET, block, { waitMs: 60_000 });
        if (performance.now() - t0 > 50) slow++;
        lookups++;
        for (const a of block.slice(0, 300)) {
          if (!found.get(a)?.some((w) => w.subscriptionId === watched.get(a))) problems.push(`${a} said not watched`);
        }
      }
    })();
    return { done, problems, stats: () => ({ lookups, slow }) };
  }

  test("FLUSHDB: lookups wait instead of answering 'not watched', and the index comes back equal to PostgreSQL", async () => {
    let stop = false;
    const loop = lookupLoop(() => stop);
    await Bun.sleep(100);
    // Writes keep coming while the index is gone and rebuilt: they must end up in it.
    const writer = (async () => {
      const extra = generated(200);
      for (let i = 0; i < 20; i++) {
        const res = await api(stack, key, "PATCH", `/v1/subscriptions/${watched.get(VALID[0]!)}/filters/addresses`, {
          add: extra.slice(i * 10, i * 10 + 10).map((address) => ({ chainId: MAINNET, address })),
          remove: i > 0 ? [{ chainId: MAINNET, address: extra[(i - 1) * 10]! }] : [],
        });
        expect(res.status).toBe(200);
        await Bun.sleep(15);
      }
    })();
    await stack.redis.flush();
    const flushedAt = Date.now();
    await writer;
    await waitUntilReady(stack.registry.redis, stack.config.redisPrefix);
    const readyAfter = Date.now() - flushedAt;
    await Bun.sleep(100);
    stop = true;
    await loop.done;
    expect(loop.problems).toEqual([]);
    expect(loop.stats().lookups).toBeGreaterThan(3);
    // The rebuild of ~22,000 entries is not instant: some lookups had to wait for it.
    if (readyAfter > 200) expect(loop.stats().slow).toBeGreaterThan(0);
    expect(await actualIndex(stack.registry.redis, stack.config.redisPrefix)).toEqual(await expectedIndex(sql));
  }, 120_000);

  test("an on-demand rebuild while writes continue keeps answering and ends equal to PostgreSQL", async () => {
    const rebuild = createClient(WatchIndexService, inProcessTransport(stack.registry.routes));
    let stop = false;
    const loop = lookupLoop(() => stop);
    const target = watched.get(VALID[0]!)!;
    const extra = generated(300);
    const writes = (async () => {
      for (let i = 0; i < 30; i++) {
        await api(stack, key, "PATCH", `/v1/subscriptions/${target}/filters/addresses`, {
          add: extra.slice(i * 10, i * 10 + 10).map((address) => ({ chainId: MAINNET, address })),
          remove: i % 3 === 0 && i > 0 ? [{ chainId: MAINNET, address: extra[(i - 1) * 10]! }] : [],
        });
      }
      // Status and kind changes during the rebuild too.
      await api(stack, key, "PUT", `/v1/subscriptions/${target}`, {
        destination: { type: "https", url: TEST_DESTINATION },
        events: ["wallet.transfer.broadcasted", "service.ping"],
      });
    })();
    const [result] = await Promise.all([rebuild.rebuildWatchIndex({}), writes]);
    expect(Number(result.addresses)).toBeGreaterThanOrEqual(22_000);
    stop = true;
    await loop.done;
    expect(loop.problems).toEqual([]);
    expect(await actualIndex(stack.registry.redis, stack.config.redisPrefix)).toEqual(await expectedIndex(sql));
    // A rebuild for an unknown chain is refused.
    await expect(rebuild.rebuildWatchIndex({ chainIds: ["tron:moon"] })).rejects.toThrow();
  }, 120_000);

  test("a build left behind by a dead process is noticed and replaced", async () => {
    // What a registry that died mid-rebuild leaves: state.next pointing at a half-built generation.
    const orphan = await beginBuild(stack.registry.redis, stack.config.redisPrefix, MAINNET, false);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const state = await readState(stack.registry.redis, stack.config.redisPrefix, MAINNET);
      if (state.next === null && state.cur !== orphan.generation) break;
      if (Date.now() > deadline) throw new Error("the orphaned build was never replaced");
      await Bun.sleep(100);
    }
    expect(await actualIndex(stack.registry.redis, stack.config.redisPrefix)).toEqual(await expectedIndex(sql));
  }, 60_000);

  test("deleted subscriptions stop matching at once and their entries are swept", async () => {
    const list = generated(50);
    const id = await subscribe(stack, key, list);
    expect((await lookup(stack.registry.redis, stack.config.redisPrefix, MAINNET, list)).size).toBe(50);
    expect((await api(stack, key, "DELETE", `/v1/subscriptions/${id}`)).status).toBe(204);
    const after = await lookup(stack.registry.redis, stack.config.redisPrefix, MAINNET, list, { includeInactive: true });
    expect(after.size).toBe(0);
    // The watchdog sweeps the dead handle's fields within a few seconds.
    const deadline = Date.now() + 15_000;
    for (;;) {
      const state = await readState(stack.registry.redis, stack.config.redisPrefix, MAINNET);
      if (state.dead === 0) break;
      if (Date.now() > deadline) throw new Error("dead handles were not swept");
      await Bun.sleep(200);
    }
    expect(await actualIndex(stack.registry.redis, stack.config.redisPrefix)).toEqual(await expectedIndex(sql));
  }, 60_000);
});

describe("Redis unreachable while a write commits", () => {
  let target: TestRedis;
  let proxy: ReturnType<typeof redisProxy>;
  let stack: Stack;
  let sql: SQL;
  let direct: Redis;

  beforeAll(async () => {
    target = await allocateRedisDb();
    proxy = redisProxy(Number(new URL(target.url).port || 6379));
    const port = await proxy.listen();
    stack = await startStack({ env: { REDIS_URL: `redis://127.0.0.1:${port}/${target.db}` } });
    sql = new SQL(stack.database.url, { max: 2 });
    direct = new Redis(target.url);
  }, 60_000);

  afterAll(async () => {
    direct?.disconnect();
    await sql?.close();
    await stack?.stop();
    await proxy?.close();
    await target?.release();
  }, 60_000);

  test("PostgreSQL keeps the change, the failure is recorded, and the index is rebuilt once Redis is back", async () => {
    const key = await stack.createKey();
    const id = await subscribe(stack, key, VALID.slice(0, 3));
    await waitUntilReady(direct, stack.config.redisPrefix);

    proxy.cut();
    const t0 = Date.now();
    const res = await api(stack, key, "PATCH", `/v1/subscriptions/${id}/filters/addresses`, {
      add: [{ chainId: MAINNET, address: VALID[3]! }],
      remove: [{ chainId: MAINNET, address: VALID[0]! }],
    });
    expect(res.status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(10_000);
    const [marker] = (await sql`SELECT value FROM app_settings WHERE name = 'watch_index_dirty'`) as { value: string }[];
    expect(marker).toBeDefined();

    proxy.restore();
    // Back: the registry marks the index stale and rebuilds it; lookups wait until then, then see the change.
    const found = await lookup(direct, stack.config.redisPrefix, MAINNET, [VALID[0]!, VALID[3]!], { waitMs: 30_000 });
    await waitUntilReady(direct, stack.config.redisPrefix);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const [row] = (await sql`SELECT value FROM app_settings WHERE name = 'watch_index_dirty'`) as { value: string }[];
      if (!row) break;
      if (Date.now() > deadline) throw new Error("the failure marker was never cleared");
      await Bun.sleep(100);
    }
    const now = await lookup(direct, stack.config.redisPrefix, MAINNET, [VALID[0]!, VALID[3]!]);
    expect([...now.keys()]).toEqual([VALID[3]!]);
    expect(found.has(VALID[3]!) || now.has(VALID[3]!)).toBe(true);
    expect(await actualIndex(direct, stack.config.redisPrefix)).toEqual(await expectedIndex(sql));
  }, 90_000);
});
