// End to end on a real 3-master Redis Cluster (test/support/redis-cluster.ts): transfers touching watched addresses
// in new blocks (tools/tron-sim → matcher → the watch index sharded over the cluster → deliverer → the verifying HTTPS
// receiver) become one signed delivery each. A master killed with SIGKILL and started again empty mid-run loses
// none of them: the registry rebuilds the watch-index shards it held (lookups wait meanwhile, so the matcher never
// passes a block as "not watched") and the deliverer its schedule shards. The subscription and its watches are made
// through the public API with the generated client, as a customer's would.
import { afterAll, beforeAll, expect, test } from "bun:test";
import fixtures from "../../fixtures/tron/addresses.json";
import { IORedis } from "../../common/redis.ts";
import { shardBase, slotOf } from "../../common/watch-index/layout.ts";
import { blockWith, startMatcherBed, type MatcherBed } from "../support/matcher-bed.ts";

const WATCHED = (fixtures.valid as string[]).slice(0, 12);
const OTHER = "TYCrwuKFKhLsbuSY5Jpwd8LYdq6QU8d9J5";
const MAINNET = "tron:mainnet";

let t: MatcherBed;

beforeAll(async () => {
  t = await startMatcherBed({ redisKind: "cluster", publicApi: true });
}, 60_000);

afterAll(async () => {
  await t?.stop();
}, 60_000);

/** The port of the master serving `key`'s slot. */
async function ownerOf(ports: number[], key: string): Promise<number> {
  const c = new IORedis({ host: "127.0.0.1", port: ports[0]! });
  try {
    const slot = Number(await c.cluster("KEYSLOT", key));
    const master = (await c.cluster("SLOTS")).find(([from, to]) => slot >= from && slot <= to)?.[2];
    if (!master) throw new Error(`no node serves ${key}`);
    return Number(master[1]);
  } finally {
    c.disconnect();
  }
}

test("blocks before and after a master restart: every transfer to a watched address is delivered once", async () => {
  const sim = t.sims[MAINNET]!;
  const path = "/cluster";
  const sub = await t.api!.subscribe(path);
  await t.api!.watch(sub, MAINNET, WATCHED);
  const shards = new Set(WATCHED.map((a) => slotOf(a).shard));
  expect(shards.size).toBeGreaterThan(3);

  const first = await blockWith(sim, WATCHED.map((from, i) => ({ type: "trx" as const, from, to: OTHER, amount: 1_000 + i })));
  await t.matcher!.waitForBlock(MAINNET, first.number, 30_000);
  await t.bed.receiver.waitForCount(path, WATCHED.length, 30_000);

  // The master holding the first watched address's shard: its part of the index and of the schedule is lost.
  const cluster = t.bed.redis.cluster!;
  const victim = await ownerOf(cluster.nodes.map((n) => n.port), `${shardBase(t.bed.config.redisPrefix, MAINNET, slotOf(WATCHED[0]!).shard)}state`);
  const restarted = cluster.restart(victim, 300);
  const second = await blockWith(sim, WATCHED.map((to, i) => ({ type: "trx" as const, from: OTHER, to, amount: 2_000 + i })));
  await restarted;
  await t.matcher!.waitForBlock(MAINNET, second.number, 60_000);
  await t.bed.receiver.waitForCount(path, 2 * WATCHED.length, 60_000);

  const deliveries = t.bed.receiver.deliveries(path);
  for (const d of deliveries) expect(d.verified).toBe(true);
  const ids = new Set(deliveries.map((d) => d.headers["webhook-id"]));
  expect(ids.size).toBe(2 * WATCHED.length);
  const txs = new Set(deliveries.map((d) => (JSON.parse(d.body) as { data: { txId: string } }).data.txId));
  for (const tx of [...first.txIds, ...second.txIds]) expect(txs.has(tx)).toBe(true);
}, 120_000);
