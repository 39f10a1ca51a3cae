// The watch index comes back from PostgreSQL: Redis emptied (FLUSHDB) while the service runs, one chain's index
// lost (only that chain is rebuilt), an on-demand rebuild while writes continue. Lookups made meanwhile never answer
// "not watched" for an address that is watched: while the index is not ready they wait (common/watch-index/reader.ts), then
// answer in full. A Redis outage needs no rebuild at all (watch-index.outage.test.ts). Real PostgreSQL and Redis: one
// server, and a real 3-master Redis Cluster (the chain's shards spread over its nodes).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { SQL } from "bun";
import fixtures from "../../../fixtures/tron/addresses.json";
import { inProcessTransport } from "../../../common/rpc.ts";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { beginBuild, readState } from "../../../common/watch-index/generations.ts";
import { lookup } from "../../../common/watch-index/reader.ts";
import { WatchIndexService } from "../../../gen/webhooks/registry/v1/registry_pb.ts";
import { keysEverywhere, REDIS_KINDS } from "../../support/redis-cluster.ts";
import { startStack, TEST_DESTINATION, type Stack, type TestKey } from "../../support/stack.ts";
import { actualIndex, expectedIndex, waitUntilReady } from "../../support/watch-index.ts";
import { until } from "../../support/wait.ts";

const MAINNET = "tron:mainnet";
const VALID = fixtures.valid as string[];
const generated = (n: number) => Array.from({ length: n }, () => hexToBase58("41" + randomBytes(20).toString("hex")));

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
        const found = await lookup(stack.registry.watchIndex.index(MAINNET), block, { waitMs: 60_000 });
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

  test("one chain's index lost: only that chain is rebuilt, the others keep their generation", async () => {
    const chains = ["tron:mainnet", "tron:nile", "tron:shasta"];
    const before = await Promise.all(chains.map((c) => readState(stack.registry.watchIndex.index(c))));
    // Every key of nile's index gone in every shard (as if deleted by hand; on a cluster the shards are spread over
    // the nodes, so one UNLINK per key), the other chains' untouched.
    const redis = stack.registry.redis;
    const nileKeys = await keysEverywhere(redis, `${stack.config.redisPrefix}wi:{tron:nile:*`);
    expect(nileKeys.length).toBeGreaterThan(1);
    await Promise.all(nileKeys.map((k) => redis.unlink(k)));
    await waitUntilReady(stack.registry.redis, stack.config.redisPrefix);
    const after = await Promise.all(chains.map((c) => readState(stack.registry.watchIndex.index(c))));
    expect(after[0]!.cur).toBe(before[0]!.cur);
    expect(after[2]!.cur).toBe(before[2]!.cur);
    expect(after[1]!.cur).not.toBeNull();
    expect(await actualIndex(stack.registry.redis, stack.config.redisPrefix)).toEqual(await expectedIndex(sql));
  }, 60_000);

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

  test("a rebuild copied in several batches at once, while changes commit, reads one snapshot and ends equal to PostgreSQL", async () => {
    // 1,200 subscriptions written into PostgreSQL behind the outbox's back (so only a rebuild can bring them into the
    // index): more than the 500 subscriptions a batch holds, so the copy runs in several batches, in parallel
    // (registry/watch-index/rebuild.ts). Changes committed meanwhile must end in the index too, applied after it.
    const base = await subscribe(stack, key, generated(1));
    const copies = 1_200;
    const subIds = Array.from({ length: copies }, (_, g) => `${base}_c${g}`);
    await sql`INSERT INTO subscriptions
              SELECT (jsonb_populate_record(NULL::subscriptions, to_jsonb(s) || jsonb_build_object('id', s.id || '_c' || g, 'address_count', 2))).*
              FROM subscriptions s CROSS JOIN generate_series(0, ${copies - 1}) g WHERE s.id = ${base}`;
    const owners = subIds.flatMap((id) => [id, id]);
    const list = generated(owners.length);
    await sql`INSERT INTO subscription_addresses (subscription_id, chain_id, address)
              SELECT s, ${MAINNET}, a FROM unnest(${"{" + owners.join(",") + "}"}::text[], ${"{" + list.join(",") + "}"}::text[]) AS u(s, a)`;
    expect((await lookup(stack.registry.watchIndex.index(MAINNET), list.slice(0, 50))).size).toBe(0);

    const rebuild = createClient(WatchIndexService, inProcessTransport(stack.registry.routes));
    const target = watched.get(VALID[0]!)!;
    const extra = generated(100);
    const writes = (async () => {
      for (let i = 0; i < 10; i++) {
        const res = await api(stack, key, "PATCH", `/v1/subscriptions/${target}/filters/addresses`, {
          add: extra.slice(i * 10, i * 10 + 10).map((address) => ({ chainId: MAINNET, address })),
          remove: i > 0 ? [{ chainId: MAINNET, address: extra[(i - 1) * 10]! }] : [],
        });
        expect(res.status).toBe(200);
      }
    })();
    const [result] = await Promise.all([rebuild.rebuildWatchIndex({ chainIds: [MAINNET] }), writes]);
    expect(Number(result.subscriptions)).toBeGreaterThan(copies);
    await until("the outbox drained", async () => ((await sql`SELECT count(*)::int AS n FROM watch_outbox WHERE applied_position IS NULL`) as { n: number }[])[0]!.n === 0, 15_000, 25);
    expect((await lookup(stack.registry.watchIndex.index(MAINNET), list)).size).toBe(list.length);
    expect(await actualIndex(stack.registry.redis, stack.config.redisPrefix)).toEqual(await expectedIndex(sql));
  }, 120_000);

  test("a build left behind by a dead process is noticed and replaced", async () => {
    // What a registry that died mid-rebuild leaves: state.next pointing at a half-built generation.
    const orphan = await beginBuild(stack.registry.watchIndex.index(MAINNET), false);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const state = await readState(stack.registry.watchIndex.index(MAINNET));
      if (state.next === null && state.cur !== orphan.generation) break;
      if (Date.now() > deadline) throw new Error("the orphaned build was never replaced");
      await Bun.sleep(100);
    }
    expect(await actualIndex(stack.registry.redis, stack.config.redisPrefix)).toEqual(await expectedIndex(sql));
  }, 60_000);

  test("deleted subscriptions stop matching at once and their entries are swept", async () => {
    const list = generated(50);
    const id = await subscribe(stack, key, list);
    expect((await lookup(stack.registry.watchIndex.index(MAINNET), list)).size).toBe(50);
    expect((await api(stack, key, "DELETE", `/v1/subscriptions/${id}`)).status).toBe(204);
    const after = await lookup(stack.registry.watchIndex.index(MAINNET), list, { includeInactive: true });
    expect(after.size).toBe(0);
    // The registry's upkeep sweeps the dead handle's fields within a few seconds.
    const deadline = Date.now() + 15_000;
    for (;;) {
      const state = await readState(stack.registry.watchIndex.index(MAINNET));
      if (state.dead === 0) break;
      if (Date.now() > deadline) throw new Error("dead handles were not swept");
      await Bun.sleep(200);
    }
    expect(await actualIndex(stack.registry.redis, stack.config.redisPrefix)).toEqual(await expectedIndex(sql));
  }, 60_000);
});
