// `bun run bench index`: the watch index at 1,000,000 watched addresses over 1,000 subscriptions, each figure beside
// the naive way measured in the same run (one SISMEMBER per address on a plain set of strings; one INSERT and one
// SADD per address for writes). Targets (issue 3): PATCH of 10,000 ≤ 500 ms, PUT of 10,000 ≤ 700 ms (index
// updated), lookup of a 600-address block ≤ 5 ms p50 and ≤ 2× between 10,000 and 1,000,000 watched, Redis memory
// ≤ 120 bytes per watched address. Uses its own PostgreSQL database and Redis DB (test/support).
import { randomBytes } from "node:crypto";
import { cpus, loadavg } from "node:os";
import { createClient } from "@connectrpc/connect";
import { SQL } from "bun";
import Redis from "ioredis";
import { ApiKeyService, SubscriptionService, WatchIndexService } from "../gen/webhooks/registry/v1/registry_pb.ts";
import { loadConfig } from "../common/config.ts";
import { setLogLevel } from "../common/logger.ts";
import { inProcessTransport } from "../common/rpc.ts";
import { staticResolver } from "../common/ssrf.ts";
import { hexToBase58, isBase58Address } from "../common/tron-address.ts";
import { applyAddresses, beginBuild, chainBase, dropGeneration, finishBuild, lookup, readState } from "../common/watch-index.ts";
import { createRegistry } from "../registry/index.ts";
import { createTestDatabase } from "../test/support/db.ts";
import { allocateRedisDb } from "../test/support/redis.ts";

const CHAIN = "tron:mainnet";
const SUBSCRIPTIONS = 1_000;
const PER_SUBSCRIPTION = 1_000;
const BLOCK = 600;
const HITS_PER_BLOCK = 60;
const LOOKUP_RUNS = 300;

const addr = () => hexToBase58("41" + randomBytes(20).toString("hex"));
const addresses = (n: number) => Array.from({ length: n }, addr);

function pct(samples: number[], p: number): number {
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

const ms = (n: number) => `${n.toFixed(2)} ms`;

async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info("memory");
  return Number(/used_memory:(\d+)/.exec(info)![1]);
}

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const out = await fn();
  return [performance.now() - t0, out];
}

const n = SUBSCRIPTIONS * PER_SUBSCRIPTION;

export default async function bench(): Promise<void> {
  setLogLevel("warn");
  const load0 = loadavg()[0]!;
  const database = await createTestDatabase("benchindex");
  const redisDb = await allocateRedisDb();
  const config = loadConfig({ DATABASE_URL: database.url, REDIS_URL: redisDb.url, APP_SECRET: randomBytes(32).toString("base64") });
  const registry = await createRegistry(config, { resolver: staticResolver({ "bench.receiver.test": ["93.184.216.34"] }) });
  const redis = new Redis(redisDb.url);
  const sql = new SQL(database.url, { max: 4 });
  const transport = inProcessTransport(registry.routes);
  const subs = createClient(SubscriptionService, transport);
  const keys = createClient(ApiKeyService, transport);
  const wi = createClient(WatchIndexService, transport);
  const prefix = config.redisPrefix;
  const naiveSet = `bench:naive:{${CHAIN}}`;
  try {
    const keyId = (await keys.createApiKey({ name: "bench", chains: [] })).key!.id;
    const ids: string[] = [];
    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      const res = await subs.createSubscription({
        keyId,
        destination: { type: "https", url: "https://bench.receiver.test/hook" },
        events: ["wallet.transfer.broadcasted"],
      });
      ids.push(res.subscription!.id);
    }
    console.log(`generating ${SUBSCRIPTIONS * PER_SUBSCRIPTION} base58check addresses…`);
    const watched: string[][] = ids.map(() => addresses(PER_SUBSCRIPTION));

    // Preload straight into PostgreSQL (the bulk load is not what is measured), then let the index rebuild.
    async function load(from: number, to: number) {
      for (let i = from; i < to; i++) {
        const list = watched[i]!;
        await sql`INSERT INTO subscription_addresses (subscription_id, chain_id, address)
                  SELECT ${ids[i]!}, ${CHAIN}, a FROM unnest(${"{" + list.join(",") + "}"}::text[]) AS a`;
        await sql`UPDATE subscriptions SET address_count = ${list.length} WHERE id = ${ids[i]!}`;
      }
    }
    async function lookups(count: number) {
      const flat = watched.slice(0, count / PER_SUBSCRIPTION).flat();
      const blocks = Array.from({ length: 20 }, () => [
        ...Array.from({ length: HITS_PER_BLOCK }, () => flat[Math.floor(Math.random() * flat.length)]!),
        ...addresses(BLOCK - HITS_PER_BLOCK),
      ]);
      // The naive way: a plain set of the same strings, one SISMEMBER per address.
      await redis.del(naiveSet);
      for (let i = 0; i < flat.length; i += 10_000) await redis.sadd(naiveSet, ...flat.slice(i, i + 10_000));
      const ours: number[] = [];
      const naive: number[] = [];
      for (let r = 0; r < LOOKUP_RUNS; r++) {
        const block = blocks[r % blocks.length]!;
        const [t1, found] = await timed(() => lookup(registry.redis, prefix, CHAIN, block));
        if (found.size < HITS_PER_BLOCK * 0.9) throw new Error(`lookup found ${found.size} of ~${HITS_PER_BLOCK}`);
        ours.push(t1);
        const [t2] = await timed(async () => {
          let hits = 0;
          for (const a of block) hits += await redis.sismember(naiveSet, a);
          return hits;
        });
        naive.push(t2);
      }
      await redis.del(naiveSet);
      return { ours, naive };
    }

    // ---- 10,000 watched
    await load(0, 10);
    let [t] = await timed(() => wi.rebuildWatchIndex({ chainIds: [CHAIN] }));
    console.log(`rebuild of 10,000 addresses: ${ms(t)}`);
    const small = await lookups(10_000);

    // ---- 1,000,000 watched
    await load(10, SUBSCRIPTIONS);
    // Measure one clean build: no upkeep rebuild running beside it, nothing left from the earlier generation.
    await registry.watchIndex.stop();
    await redis.flushdb();
    const mem0 = await usedMemory(redis);
    [t] = await timed(() => wi.rebuildWatchIndex({}));
    const mem1 = await usedMemory(redis);
    console.log(`rebuild of 1,000,000 addresses: ${ms(t)}`);
    const state = await readState(registry.redis, prefix, CHAIN);
    // Cross-check of INFO (server-wide, so other clients add noise): MEMORY USAGE of every key of the generation.
    let exact = 0;
    const gb = `${chainBase(prefix, CHAIN)}${state.cur}:`;
    for (const name of ["sub", "meta", "keys", "seq"]) exact += Number((await redis.memory("USAGE", gb + name, "SAMPLES", 0)) ?? 0);
    for (let b = 0; b < 32_768; b += 512) {
      const pipe = redis.pipeline();
      for (let i = b; i < b + 512; i++) pipe.memory("USAGE", `${gb}b:${i}`, "SAMPLES", 0);
      for (const [, v] of (await pipe.exec()) ?? []) exact += Number(v ?? 0);
    }
    const big = await lookups(1_000_000);
    const nm0 = await usedMemory(redis);
    const flat = watched.flat();
    for (let i = 0; i < flat.length; i += 10_000) await redis.sadd(naiveSet, ...flat.slice(i, i + 10_000));
    const nm1 = await usedMemory(redis);
    const naiveExact = Number((await redis.memory("USAGE", naiveSet, "SAMPLES", 0)) ?? 0);
    // INFO is server-wide and other clients come and go during a 15 s build; dropping a structure is one instant,
    // so the memory it frees is the steadier INFO figure.
    const nd0 = await usedMemory(redis);
    await redis.del(naiveSet);
    const nd1 = await usedMemory(redis);

    // ---- writes at 1,000,000 watched
    const target = ids[500]!;
    const patchAdds = addresses(10_000);
    [t] = await timed(() =>
      subs.patchAddresses({ keyId, id: target, add: patchAdds.map((address) => ({ chainId: CHAIN, address })) }),
    );
    const patchMs = t;
    const check = await lookup(registry.redis, prefix, CHAIN, patchAdds.slice(0, 100));
    if (check.size !== 100) throw new Error("PATCH did not reach the index");
    const putList = addresses(10_000);
    [t] = await timed(() =>
      subs.replaceAddresses({ keyId, id: target, addresses: putList.map((address) => ({ chainId: CHAIN, address })) }),
    );
    const putMs = t;
    if ((await lookup(registry.redis, prefix, CHAIN, putList.slice(0, 100))).size !== 100) throw new Error("PUT missed the index");
    if ((await lookup(registry.redis, prefix, CHAIN, patchAdds.slice(0, 100))).size !== 0) throw new Error("PUT left old entries");

    // Where a PATCH's time goes: each part alone, on 10,000 fresh addresses.
    const parts = addresses(10_000);
    const [validateMs] = await timed(async () => parts.every((a) => isBase58Address(a)));
    const scratch = "bench:scratch:";
    const { generation } = await beginBuild(redis, scratch, CHAIN, false);
    await finishBuild(redis, scratch, CHAIN, generation);
    const [indexMs] = await timed(() =>
      applyAddresses(redis, { prefix: scratch, chainId: CHAIN }, { id: "sub_scratch", keyId: "key_scratch", enabled: true, events: [] }, true, {
        add: parts,
        remove: [],
      }),
    );
    await dropGeneration(redis, scratch, CHAIN, generation);
    await redis.del(`${chainBase(scratch, CHAIN)}state`);
    const [sqlMs] = await timed(() =>
      sql
        .begin(async (tx) => {
          await tx`SELECT 1 FROM subscriptions WHERE id = ${ids[502]!} FOR UPDATE`;
          await tx`INSERT INTO subscription_addresses (subscription_id, chain_id, address)
                   SELECT ${ids[502]!}, ${CHAIN}, a FROM unnest(${"{" + parts.join(",") + "}"}::text[]) WITH ORDINALITY AS u(a, o) ORDER BY o
                   ON CONFLICT DO NOTHING RETURNING chain_id, address`;
          throw new Error("rollback");
        })
        .catch(() => {}),
    );

    // Naive writes: one INSERT and one SADD per address, in a transaction.
    const naiveTarget = ids[501]!;
    const naiveAdds = addresses(10_000);
    const [naivePatchMs] = await timed(() =>
      sql.begin(async (tx) => {
        await tx`SELECT 1 FROM subscriptions WHERE id = ${naiveTarget} FOR UPDATE`;
        for (const a of naiveAdds) {
          await tx`INSERT INTO subscription_addresses (subscription_id, chain_id, address) VALUES (${naiveTarget}, ${CHAIN}, ${a}) ON CONFLICT DO NOTHING`;
          await redis.sadd(naiveSet, a);
        }
      }),
    );
    const naivePut = addresses(10_000);
    const [naivePutMs] = await timed(() =>
      sql.begin(async (tx) => {
        const old = (await tx`DELETE FROM subscription_addresses WHERE subscription_id = ${naiveTarget} RETURNING address`) as { address: string }[];
        for (const o of old) await redis.srem(naiveSet, o.address);
        for (const a of naivePut) {
          await tx`INSERT INTO subscription_addresses (subscription_id, chain_id, address) VALUES (${naiveTarget}, ${CHAIN}, ${a}) ON CONFLICT DO NOTHING`;
          await redis.sadd(naiveSet, a);
        }
      }),
    );

    // Last, so the writes above ran against the full index: what dropping it frees.
    const od0 = await usedMemory(redis);
    await dropGeneration(redis, prefix, CHAIN, state.cur!);
    const od1 = await usedMemory(redis);
    // What the index held when dropped: every subscription's 1,000, except the one the PUT left at 10,000.
    const indexed = n - PER_SUBSCRIPTION + 10_000;

    const p50s = pct(small.ours, 50);
    const p50b = pct(big.ours, 50);
    console.log("");
    console.log(`watch index, ${n.toLocaleString("en")} addresses over ${SUBSCRIPTIONS} subscriptions (${CHAIN})`);
    console.log(`load average (1 min) at start ${load0.toFixed(2)}, at end ${loadavg()[0]!.toFixed(2)} on ${cpus().length} CPUs: shared machine, expect noise`);
    console.log(`${"figure".padEnd(47)}${"ours".padEnd(16)}${"naive (same run)".padEnd(19)}target`);
    const row = (label: string, ours: string, naive: string, target: string) =>
      console.log(`${label.padEnd(47)}${ours.padEnd(16)}${naive.padEnd(19)}${target}`);
    row("lookup 600-address block, 10k watched p50", ms(p50s), ms(pct(small.naive, 50)), "≤ 5 ms");
    row("lookup 600-address block, 1M watched p50", ms(p50b), ms(pct(big.naive, 50)), "≤ 5 ms");
    row("lookup p95 at 1M", ms(pct(big.ours, 95)), ms(pct(big.naive, 95)), "");
    row("lookup p50 ratio 1M / 10k", `${(p50b / p50s).toFixed(2)}×`, `${(pct(big.naive, 50) / pct(small.naive, 50)).toFixed(2)}×`, "≤ 2×");
    row("PATCH 10,000 adds (index updated)", ms(patchMs), ms(naivePatchMs), "≤ 500 ms");
    row("  PATCH part: base58check of 10,000", ms(validateMs), "", "");
    row("  PATCH part: index write of 10,000 (Redis)", ms(indexMs), "", "");
    row("  PATCH part: INSERT of 10,000 (PostgreSQL)", ms(sqlMs), "", "");
    row("PUT 10,000 (index updated)", ms(putMs), ms(naivePutMs), "≤ 700 ms");
    row("Redis bytes / address, INFO across build", ((mem1 - mem0) / n).toFixed(1), ((nm1 - nm0) / n).toFixed(1), "≤ 120");
    row("Redis bytes / address, INFO freed on drop", ((od0 - od1) / indexed).toFixed(1), ((nd0 - nd1) / n).toFixed(1), "≤ 120");
    row("Redis bytes / address, MEMORY USAGE", (exact / n).toFixed(1), (naiveExact / n).toFixed(1), "");
    console.log("(naive: membership only, one SISMEMBER per address on a plain set; it knows no subscribers, status or kinds)");
  } finally {
    await redis.del(naiveSet).catch(() => {});
    redis.disconnect();
    await sql.close();
    await registry.close();
    await redisDb.release();
    await database.drop();
  }
}
