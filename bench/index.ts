// `bun run bench index [--addresses N] [--subscriptions M] [--redis server|cluster]`: the watch index of one chain at
// scale, by default 10,000,000 watched addresses over 10,000 subscriptions (issue 11), each figure beside its baseline
// measured in the same run:
//   - Redis memory per address (INFO used_memory across the rebuild, on a Redis of the bench's own, so no other client
//     adds noise), beside a plain set of the same strings; target ≤ 60 B.
//   - lookup of a 600-address block (60 watched), p50 and p95, beside the floor: one SMISMEMBER of the same 600
//     strings on that plain set (membership only, one command, one round trip); target p50 ≤ 5 ms.
//   - rebuild from PostgreSQL (WatchIndexService.RebuildWatchIndex), beside the floor: reading the same rows the
//     rebuild reads, the same way (batches, one at a time), without writing Redis; target ≤ 60 s.
//   - PATCH / PUT of 10,000 addresses at full size (index updated), beside one INSERT + SADD per address.
// `--redis cluster` runs it all on a real 3-master Redis Cluster started for the run (memory summed over masters).
// Where the time goes is in the README (Benchmarks) with the figures. The data set is made first: M subscriptions
// through the registry's RPC, N random base58check addresses straight into PostgreSQL (not measured); at 10,000,000
// the whole run took 8–13 minutes on this shared 2-core machine (load average 11–16), 6–9 of them making the data.
// Where the rebuild's time goes: Redis CPU ≈ 3 µs per address (one HSETNX per address inside the batch scripts,
// INFO commandstats), the registry's CPU about half that, PostgreSQL reading the rows (the floor printed beside it).
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { createClient } from "@connectrpc/connect";
import { SQL } from "bun";
import { ApiKeyService, SubscriptionService, WatchIndexService } from "../gen/webhooks/registry/v1/registry_pb.ts";
import { loadConfig } from "../common/config.ts";
import { setLogLevel } from "../common/logger.ts";
import { IORedis, openRedis, type Redis } from "../common/redis.ts";
import { inProcessTransport } from "../common/rpc.ts";
import { staticResolver } from "../common/ssrf.ts";
import { hexToBase58, isBase58Address } from "../common/tron-address.ts";
import { beginBuild, dropGeneration, finishBuild, readState } from "../common/watch-index/generations.ts";
import { shardBase, slotOf, watchIndexHandle } from "../common/watch-index/layout.ts";
import { lookup } from "../common/watch-index/reader.ts";
import { applyAddresses } from "../common/watch-index/writer.ts";
import { createRegistry } from "../registry/index.ts";
import { createTestDatabase } from "../test/support/db.ts";
import { startPrivateRedis, startRedisCluster } from "../test/support/redis-cluster.ts";

const CHAIN = "tron:mainnet";
const BLOCK = 600;
const HITS_PER_BLOCK = 60;
const LOOKUP_RUNS = 300;
const SAMPLE = 60_000;

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

const addr = (bytes: Buffer, i: number) => hexToBase58("41" + bytes.subarray(i * 20, i * 20 + 20).toString("hex"));
const addresses = (n: number) => {
  const bytes = randomBytes(20 * n);
  return Array.from({ length: n }, (_, i) => addr(bytes, i));
};

function pct(samples: number[], p: number): number {
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

const ms = (n: number) => `${n.toFixed(2)} ms`;
const sec = (n: number) => `${(n / 1000).toFixed(1)} s`;

/** The clients of every master (one for a single server). */
function masters(redis: Redis): IORedis[] {
  return "nodes" in redis && typeof redis.nodes === "function" ? redis.nodes("master") : [redis as IORedis];
}

async function usedMemory(redis: Redis): Promise<number> {
  let total = 0;
  for (const m of masters(redis)) total += Number(/used_memory:(\d+)/.exec(await m.info("memory"))![1]);
  return total;
}

/** CPU time (ms) the Redis server processes have used so far (/proc/<pid>/stat utime + stime). */
async function redisCpuMs(redis: Redis): Promise<number> {
  let total = 0;
  for (const m of masters(redis)) {
    const pid = Number(/process_id:(\d+)/.exec(await m.info("server"))![1]);
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    total += (Number(fields[11]) + Number(fields[12])) * (1000 / 100);
  }
  return total;
}

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const out = await fn();
  return [performance.now() - t0, out];
}

/** Runs `fn` over `items` with at most `n` at a time. */
async function pool<T>(items: readonly T[], n: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i]!, i);
      }
    }),
  );
}

export default async function bench(): Promise<void> {
  setLogLevel("warn");
  const N = Number(arg("addresses", "10000000"));
  const M = Number(arg("subscriptions", "10000"));
  const kind = arg("redis", "server");
  const per = Math.floor(N / M);
  const n = per * M;
  const load0 = loadavg()[0]!;
  const started = Date.now();
  const server = kind === "cluster" ? await startRedisCluster(3) : await startPrivateRedis();
  const database = await createTestDatabase("benchindex");
  const config = loadConfig({
    DATABASE_URL: database.url,
    REDIS_URL: server.url,
    REDIS_PREFIX: "bench:",
    APP_SECRET: randomBytes(32).toString("base64"),
    MAX_ADDRESSES_PER_SUBSCRIPTION: String(Math.max(per, 20_000)),
  });
  const registry = await createRegistry(config, { resolver: staticResolver({ "bench.receiver.test": ["93.184.216.34"] }) });
  const redis = openRedis(server.url);
  const sql = new SQL(database.url, { max: 4 });
  const transport = inProcessTransport(registry.routes);
  const subs = createClient(SubscriptionService, transport);
  const keys = createClient(ApiKeyService, transport);
  const wi = createClient(WatchIndexService, transport);
  const prefix = config.redisPrefix;
  const naiveSet = `bench:naive:{${CHAIN}}`;
  const shards = config.watchIndexShards;
  // The chain's index through this process's connection, and through the registry's (what its lookups use).
  const index = watchIndexHandle(redis, { prefix, chainId: CHAIN, shards });
  const served = watchIndexHandle(registry.redis, { prefix, chainId: CHAIN, shards });
  try {
    const keyId = (await keys.createApiKey({ name: "bench", chains: [] })).key!.id;
    const ids: string[] = new Array(M);
    await pool(ids, 8, async (_, i) => {
      const res = await subs.createSubscription({
        keyId,
        destination: { type: "https", url: "https://bench.receiver.test/hook" },
        events: ["wallet.transfer.broadcasted"],
      });
      ids[i] = res.subscription!.id;
    });
    console.log(`${M.toLocaleString("en")} subscriptions created (${sec(Date.now() - started)}); making ${n.toLocaleString("en")} addresses…`);

    // Preload straight into PostgreSQL and into the naive set (the bulk load is not what is measured). A sample of
    // watched addresses is kept for the lookups; the rest is not held in memory.
    const sample: string[] = [];
    const naiveMem0 = await usedMemory(redis);
    const BATCH = Math.max(1, Math.floor(20_000 / per));
    for (let i = 0; i < M; i += BATCH) {
      const subIds: string[] = [];
      const list: string[] = [];
      for (let j = i; j < Math.min(i + BATCH, M); j++) {
        const mine = addresses(per);
        for (const a of mine) {
          subIds.push(ids[j]!);
          list.push(a);
        }
        if (sample.length < SAMPLE) sample.push(...mine.slice(0, Math.ceil(SAMPLE / M) + 1));
      }
      await sql`INSERT INTO subscription_addresses (subscription_id, chain_id, address)
                SELECT s, ${CHAIN}, a FROM unnest(${"{" + subIds.join(",") + "}"}::text[], ${"{" + list.join(",") + "}"}::text[]) AS u(s, a)`;
      await sql`UPDATE subscriptions SET address_count = ${per} WHERE id = ANY(${"{" + [...new Set(subIds)].join(",") + "}"}::text[])`;
      for (let k = 0; k < list.length; k += 10_000) await redis.sadd(naiveSet, ...list.slice(k, k + 10_000));
      if ((i / BATCH) % 50 === 0) console.log(`  ${(i + BATCH) * per} loaded (${sec(Date.now() - started)})`);
    }
    // As autovacuum would after such a load: the planner's statistics of the freshly filled table.
    await sql`ANALYZE subscription_addresses`;
    const naiveMem1 = await usedMemory(redis);
    console.log(`data ready (${sec(Date.now() - started)})`);

    // ---- rebuild: one clean build, no upkeep rebuild beside it, nothing left of earlier generations
    await registry.watchIndex.stop();
    const before = await readState(index);
    if (before.cur) await dropGeneration(index, before.cur);
    const mem0 = await usedMemory(redis);
    // Where the rebuild's time goes on this shared machine: CPU of the Redis processes and of this process (the
    // registry runs in it), beside the wall time.
    const redisCpu0 = await redisCpuMs(redis);
    const selfCpu0 = process.cpuUsage();
    const [rebuildMs, rebuilt] = await timed(() => wi.rebuildWatchIndex({ chainIds: [CHAIN] }));
    const selfCpu = process.cpuUsage(selfCpu0);
    const redisCpuRebuild = (await redisCpuMs(redis)) - redisCpu0;
    const mem1 = await usedMemory(redis);
    if (Number(rebuilt.addresses) !== n) throw new Error(`rebuild copied ${rebuilt.addresses} of ${n}`);
    // The floor: the rows the rebuild reads, read the same way (batches of ~40,000 addresses, their addresses joined
    // per subscription), one batch after the other, with no Redis write.
    const batches: string[][] = [];
    for (let i = 0; i < M; i += Math.max(1, Math.floor(40_000 / per))) batches.push(ids.slice(i, i + Math.max(1, Math.floor(40_000 / per))));
    const [readMs] = await timed(() =>
      pool(batches, 1, async (batch) => {
        await sql.begin(async (tx) => {
          await tx`SELECT s.id FROM subscriptions s JOIN api_keys k ON k.id = s.key_id WHERE s.id = ANY(${"{" + batch.join(",") + "}"}::text[]) ORDER BY s.id`;
          const rows = (await tx`SELECT s.id, l.chain_id, l.list FROM unnest(${"{" + batch.join(",") + "}"}::text[]) AS s(id)
                        CROSS JOIN LATERAL (SELECT chain_id, string_agg(address, ',' ORDER BY seq) AS list
                          FROM subscription_addresses a WHERE a.subscription_id = s.id GROUP BY chain_id) l`) as { list: string }[];
          for (const r of rows) r.list.split(",");
        });
      }),
    );
    const state = await readState(index);
    // Every bucket hash must have kept the compact encoding: sample one bucket per shard per 64.
    let listpack = 0;
    let sampled = 0;
    for (const a of sample.slice(0, 2_000)) {
      const { shard, bucket } = slotOf(a, shards);
      const enc = await redis.object("ENCODING", `${shardBase(prefix, CHAIN, shard, shards)}${state.cur}:b:${bucket}`);
      sampled++;
      if (enc === "listpack" || enc === "ziplist") listpack++;
    }

    // ---- lookups
    const blocks = Array.from({ length: 20 }, () => [
      ...Array.from({ length: HITS_PER_BLOCK }, () => sample[Math.floor(Math.random() * sample.length)]!),
      ...addresses(BLOCK - HITS_PER_BLOCK),
    ]);
    const ours: number[] = [];
    const floor: number[] = [];
    for (let r = 0; r < LOOKUP_RUNS; r++) {
      const block = blocks[r % blocks.length]!;
      const [t1, found] = await timed(() => lookup(served, block));
      if (found.size < HITS_PER_BLOCK * 0.9) throw new Error(`lookup found ${found.size} of ~${HITS_PER_BLOCK}`);
      ours.push(t1);
      const [t2] = await timed(() => redis.smismember(naiveSet, ...block));
      floor.push(t2);
    }

    // ---- writes at full size: the outbox applier runs again (stopped above for a clean rebuild), so a PATCH / PUT
    // answers once its row is in Redis, as in production.
    registry.watchIndex.start();
    const target = ids[Math.floor(M / 2)]!;
    const patchAdds = addresses(10_000);
    let [t] = await timed(() =>
      subs.patchAddresses({ keyId, id: target, add: patchAdds.map((address) => ({ chainId: CHAIN, address })) }),
    );
    const patchMs = t;
    if ((await lookup(served, patchAdds.slice(0, 100))).size !== 100) throw new Error("PATCH did not reach the index");
    const putList = addresses(10_000);
    [t] = await timed(() =>
      subs.replaceAddresses({ keyId, id: target, addresses: putList.map((address) => ({ chainId: CHAIN, address })) }),
    );
    const putMs = t;
    if ((await lookup(served, putList.slice(0, 100))).size !== 100) throw new Error("PUT missed the index");
    if ((await lookup(served, patchAdds.slice(0, 100))).size !== 0) throw new Error("PUT left old entries");
    const parts = addresses(10_000);
    const [validateMs] = await timed(async () => parts.every((a) => isBase58Address(a)));
    const scratch = "bench:scratch:";
    const scratchIndex = watchIndexHandle(redis, { prefix: scratch, chainId: CHAIN, shards });
    const { generation } = await beginBuild(scratchIndex, false);
    await finishBuild(scratchIndex, generation);
    const [indexMs] = await timed(() =>
      applyAddresses(scratchIndex, { id: "sub_scratch", keyId: "key_scratch", enabled: true, events: [] }, true, {
        add: parts,
        remove: [],
      }),
    );
    await dropGeneration(scratchIndex, generation);
    for (const s of scratchIndex.all) await redis.del(s.state);
    const naiveTarget = ids[Math.floor(M / 2) + 1]!;
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

    console.log("");
    console.log(`watch index, ${n.toLocaleString("en")} addresses over ${M.toLocaleString("en")} subscriptions (${CHAIN}), Redis ${kind}, ${shards} shards`);
    console.log(`load average (1 min) at start ${load0.toFixed(2)}, at end ${loadavg()[0]!.toFixed(2)} on ${cpus().length} CPUs: shared machine, expect noise; whole run ${sec(Date.now() - started)}`);
    console.log(`${"figure".padEnd(47)}${"ours".padEnd(16)}${"baseline (same run)".padEnd(22)}target`);
    const row = (label: string, o: string, base: string, goal: string) => console.log(`${label.padEnd(47)}${o.padEnd(16)}${base.padEnd(22)}${goal}`);
    row("Redis bytes / address, INFO across rebuild", ((mem1 - mem0) / n).toFixed(1), ((naiveMem1 - naiveMem0) / n).toFixed(1), "≤ 60");
    row("bucket hashes still listpack (sampled)", `${listpack} / ${sampled}`, "", "all");
    row("lookup 600-address block p50", ms(pct(ours, 50)), ms(pct(floor, 50)), "≤ 5 ms");
    row("lookup 600-address block p95", ms(pct(ours, 95)), ms(pct(floor, 95)), "");
    row("rebuild from PostgreSQL", sec(rebuildMs), sec(readMs), "≤ 60 s");
    row("  rebuild CPU: Redis / registry process", `${sec(redisCpuRebuild)} / ${sec((selfCpu.user + selfCpu.system) / 1000)}`, "", "");
    row("PATCH 10,000 adds (index updated)", ms(patchMs), ms(naivePatchMs), "");
    row("  PATCH part: base58check of 10,000", ms(validateMs), "", "");
    row("  PATCH part: index write of 10,000 (Redis)", ms(indexMs), "", "");
    row("PUT 10,000 (index updated)", ms(putMs), ms(naivePutMs), "");
    console.log("(baselines: memory and lookup, a plain set of the same strings and one SMISMEMBER; rebuild, reading its rows alone;");
    console.log(" writes, one INSERT + SADD per address)");
  } finally {
    redis.disconnect();
    await sql.close();
    await registry.close();
    await server.stop();
    await database.drop();
  }
}
