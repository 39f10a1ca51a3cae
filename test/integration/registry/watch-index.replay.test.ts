// A Redis that kept the index but lost its last writes, on one server and on a real cluster. The loss is made by
// hand exactly as a replica that lagged would show it in one shard: an applied address's field is gone and the
// shard's position is back below that change. A matcher lookup (positions read from PostgreSQL first) never answers
// "not watched" for it: it waits until the registry has replayed the applied row. When the rows to replay are past
// the outbox retention (pruned), the registry rebuilds the chain instead. Both counted in
// registry_watch_index_repairs_total.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { SQL } from "bun";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { log } from "../../../common/logger.ts";
import { readPositions, readState } from "../../../common/watch-index/generations.ts";
import { slotOf } from "../../../common/watch-index/layout.ts";
import { readAppliedPositions } from "../../../common/watch-index/positions.ts";
import { WatchIndexReader } from "../../../common/watch-index/reader.ts";
import { indexBehind } from "../../../registry/metrics.ts";
import { WatchIndex } from "../../../registry/watch-index/index.ts";
import { REDIS_KINDS } from "../../support/redis-cluster.ts";
import { startStack, TEST_DESTINATION, type Stack, type TestKey } from "../../support/stack.ts";
import { until } from "../../support/wait.ts";

const CHAIN = "tron:mainnet";
const fresh = () => hexToBase58(`41${randomBytes(20).toString("hex")}`);

describe.each(REDIS_KINDS)("Redis %s", (redisKind) => {
  let stack: Stack;
  let key: TestKey;
  let sql: SQL;

  beforeAll(async () => {
    // The verifier would find the hand-made loss too and rebuild instead: this file proves the replay path alone.
    stack = await startStack({ redisKind, env: { WATCH_INDEX_VERIFY_MS: "3600000" } });
    key = await stack.createKey();
    sql = new SQL(stack.database.url, { max: 2 });
    // The upkeep's first check of every shard comes a tick after its start: had it not run yet, it would find the
    // hand-made loss itself (when a replay meets the applier's lock) and repair it as "verify" instead.
    await until("the index checked once", async () => stack.registry.watchIndex.verifiedAt > 0, 20_000);
  }, 60_000);

  afterAll(async () => {
    await sql?.close();
    await stack?.stop();
  }, 60_000);

  async function api(method: string, path: string, body?: unknown) {
    const res = await fetch(stack.baseUrl + path, {
      method,
      headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  /** Undoes `address`'s addition in Redis as a lagging replica would hold it: field gone, shard position below it. */
  async function loseLastWrite(address: string): Promise<void> {
    const index = stack.registry.watchIndex.index(CHAIN);
    const { shard, bucket } = slotOf(address, index.shards);
    const [row] = (await sql`
      SELECT applied_position AS p FROM watch_outbox WHERE chain_id = ${CHAIN} AND ${address} = ANY("add") ORDER BY id DESC LIMIT 1`) as { p: string }[];
    const { base, state } = index.all[shard]!;
    const cur = (await readState(index)).cur!;
    expect(await index.redis.hdel(`${base}${cur}:b:${bucket}`, address)).toBe(1);
    await index.redis.hset(state, "pos", String(Number(row!.p) - 1));
  }

  const matcherLookup = (addresses: string[]) => {
    const reader = new WatchIndexReader(stack.registry.redis, stack.registry.watchIndex.db, {
      prefix: stack.config.redisPrefix,
      shards: stack.config.watchIndexShards,
      waitMs: 20_000,
    });
    return reader.lookup(CHAIN, addresses);
  };

  const repairs = async (repair: string) =>
    (await indexBehind.get()).values.find((v) => v.labels.chain === CHAIN && v.labels.repair === repair)?.value ?? 0;

  test("a lost applied write: the lookup waits for its replay instead of answering 'not watched'", async () => {
    const created = await api("POST", "/v1/subscriptions", { destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.broadcasted"] });
    const id = created.body.id as string;
    const [a, b] = [fresh(), fresh()];
    for (const address of [a, b]) {
      expect((await api("PATCH", `/v1/subscriptions/${id}/filters/addresses`, { add: [{ chainId: CHAIN, address }] })).status).toBe(200);
    }
    const before = await repairs("replay");
    // The registry's upkeep held back, so the lookup surely meets the loss.
    await stack.registry.watchIndex.stop();
    await loseLastWrite(b);
    const found = matcherLookup([a, b]);
    await Bun.sleep(500);
    stack.registry.watchIndex.start();
    const watched = await found;
    expect(watched.get(b)?.map((w) => w.subscriptionId)).toEqual([id]);
    expect(watched.get(a)?.map((w) => w.subscriptionId)).toEqual([id]);
    // Counted right after the replay's write, which the lookup may see first.
    await until("the replay counted", async () => (await repairs("replay")) > before, 10_000);
  }, 60_000);

  test("the rows to replay are pruned: the chain is rebuilt", async () => {
    const created = await api("POST", "/v1/subscriptions", { destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.broadcasted"] });
    const id = created.body.id as string;
    const c = fresh();
    expect((await api("PATCH", `/v1/subscriptions/${id}/filters/addresses`, { add: [{ chainId: CHAIN, address: c }] })).status).toBe(200);
    const before = await repairs("rebuild");
    await stack.registry.watchIndex.stop();
    await loseLastWrite(c);
    // Every applied row past a retention of 0 ms.
    const pruner = new WatchIndex(stack.registry.watchIndex.db, stack.registry.redis, stack.config.redisPrefix, log, [CHAIN], {
      shards: stack.config.watchIndexShards,
      retentionMs: 0,
    });
    expect(await pruner.prune(CHAIN)).toBeGreaterThan(0);
    const applied = await readAppliedPositions(stack.registry.watchIndex.db, CHAIN, stack.config.watchIndexShards);
    const inRedis = await readPositions(stack.registry.watchIndex.index(CHAIN));
    expect(inRedis.some((r) => r.position < applied.pruned)).toBe(true);
    const found = matcherLookup([c]);
    stack.registry.watchIndex.start();
    expect((await found).get(c)?.map((w) => w.subscriptionId)).toEqual([id]);
    await until("the rebuild counted", async () => (await repairs("rebuild")) > before, 10_000);
  }, 60_000);
});
