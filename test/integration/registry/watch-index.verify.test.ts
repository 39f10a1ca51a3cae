// Drift the writers cannot see: keys of the watch index deleted outside its scripts (by hand, a partial restore).
// Positions do not move, so only the verifier (registry/watch-index/upkeep.ts verify, every WATCH_INDEX_VERIFY_MS) finds it,
// from the counts the writers keep per shard, and rebuilds the chain: afterwards every watched address is in the
// index again and registry_watch_index_repairs_total{repair="verify"} moved. The check reads sizes only: MONITOR
// shows no command reading a bucket's fields.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { dumpChain } from "../../../common/watch-index/dump.ts";
import { verifyShards } from "../../../common/watch-index/generations.ts";
import { indexBehind } from "../../../registry/metrics.ts";
import { REDIS_KINDS, startPrivateRedis } from "../../support/redis-cluster.ts";
import { startStack, TEST_DESTINATION, type Stack, type TestKey } from "../../support/stack.ts";
import { until } from "../../support/wait.ts";
import { isCluster } from "../../../common/redis.ts";
import type { Redis as IORedis } from "ioredis";

const CHAIN = "tron:mainnet";
const fresh = () => hexToBase58(`41${randomBytes(20).toString("hex")}`);

describe.each(REDIS_KINDS)("Redis %s", (redisKind) => {
  let stack: Stack;
  let key: TestKey;
  const addresses = Array.from({ length: 20 }, fresh);
  let subscriptionId = "";

  // A server of its own: MONITOR on the shared one streams every other test's traffic, which ioredis's monitor mode
  // misreads under load ("Command queue state error"). The cluster kind's nodes are the stack's own already.
  let own: { url: string; stop(): Promise<void> } | undefined;

  beforeAll(async () => {
    if (redisKind === "server") own = await startPrivateRedis();
    stack = await startStack({ redisKind, env: { WATCH_INDEX_VERIFY_MS: "1000", ...(own ? { REDIS_URL: own.url } : {}) } });
    key = await stack.createKey();
    const res = await fetch(`${stack.baseUrl}/v1/subscriptions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        destination: { type: "https", url: TEST_DESTINATION },
        events: ["wallet.transfer.broadcasted"],
      }),
    });
    expect(res.status).toBe(201);
    subscriptionId = ((await res.json()) as { id: string }).id;
    const patched = await fetch(`${stack.baseUrl}/v1/subscriptions/${subscriptionId}/filters/addresses`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
      body: JSON.stringify({ add: addresses.map((address) => ({ chainId: CHAIN, address })) }),
    });
    expect(patched.status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
    await own?.stop();
  }, 60_000);

  const repairs = async () => (await indexBehind.get()).values.find((v) => v.labels.chain === CHAIN && v.labels.repair === "verify")?.value ?? 0;

  /** Every key of the chain's index, over every node. */
  async function indexKeys(): Promise<string[]> {
    const redis = stack.registry.redis;
    const pattern = `${stack.config.redisPrefix}wi:{${CHAIN}:*`;
    const nodes = isCluster(redis) ? redis.nodes("master") : [redis];
    const out: string[] = [];
    for (const node of nodes) {
      let cursor = "0";
      do {
        const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1_000);
        cursor = next;
        out.push(...keys);
      } while (cursor !== "0");
    }
    return out;
  }

  async function indexWhole(): Promise<boolean> {
    const dump = await dumpChain(stack.registry.watchIndex.index(CHAIN));
    return dump !== null && addresses.every((a) => dump.get(a)?.some((w) => w.subscriptionId === subscriptionId));
  }

  test("the check reads sizes, never a bucket's fields, and finds nothing in a whole index", async () => {
    await until("the index whole", indexWhole, 20_000);
    const redis = stack.registry.redis;
    const seen: string[][] = [];
    const monitors = await Promise.all((isCluster(redis) ? redis.nodes("master") : [redis as IORedis]).map((node) => node.duplicate().monitor()));
    // MONITOR reports every database of the server: only this stack's.
    const db = isCluster(redis) ? "0" : String(new URL(stack.config.redisUrl).pathname.slice(1) || "0");
    for (const m of monitors) m.on("monitor", (_time: string, args: string[], _source: string, database: string) => database === db && seen.push(args));
    const checks = await verifyShards(stack.registry.watchIndex.index(CHAIN));
    await Bun.sleep(200);
    for (const m of monitors) m.disconnect();
    expect(checks.every((c) => c.status === "whole")).toBe(true);
    const buckets = checks.reduce((n, c) => n + (c.status === "whole" ? c.buckets : 0), 0);
    const onBuckets = seen.filter((args) => args.length > 1 && /:b:\d+$/.test(String(args[1])) && String(args[1]).includes(CHAIN));
    expect(onBuckets.length).toBeGreaterThan(0);
    expect(onBuckets.every((args) => String(args[0]).toLowerCase() === "hlen")).toBe(true);
    // One HLEN per non-empty bucket per check; the registry's own periodic check may fall in the window too.
    expect(onBuckets.length % buckets).toBe(0);
  }, 60_000);

  test("half of the index's non-state keys deleted: the verifier finds it, counts it and rebuilds", async () => {
    await until("the index whole", indexWhole, 20_000);
    const before = await repairs();
    const keys = (await indexKeys()).filter((k) => !k.endsWith(":state")).sort(() => Math.random() - 0.5);
    for (const k of keys.slice(0, Math.ceil(keys.length / 2))) await stack.registry.redis.del(k);
    expect(await indexWhole()).toBe(false);
    await until("a verify repair and the index whole", async () => (await repairs()) > before && (await indexWhole()), 20_000);
  }, 60_000);

  test("half of all the index's keys deleted at random: whole again", async () => {
    await until("the index whole", indexWhole, 20_000);
    const keys = (await indexKeys()).sort(() => Math.random() - 0.5);
    for (const k of keys.slice(0, Math.ceil(keys.length / 2))) await stack.registry.redis.del(k);
    await until("the index whole", indexWhole, 20_000);
  }, 60_000);
});
