// common/watch-index/ on its own, against a real Redis DB and a real 3-master Redis Cluster: the reader's contract
// the matcher relies on, and the generation mechanics the registry's rebuild relies on.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import fixtures from "../../../fixtures/tron/addresses.json";
import { beginBuild, finishBuild, markStale, readState, sweepDeadHandles } from "../../../common/watch-index/generations.ts";
import { shardBase, slotOf, watchIndexHandle, type WatchIndexHandle } from "../../../common/watch-index/layout.ts";
import { lookup, WatchIndexNotReadyError } from "../../../common/watch-index/reader.ts";
import { applyAddresses, dropSubscription, setKeyState, setSubscriptionMeta } from "../../../common/watch-index/writer.ts";
import type { Redis } from "../../../common/redis.ts";
import { defaultMatch, type MatchConditions } from "../../../common/match-conditions.ts";
import { keysEverywhere, openTestRedis, REDIS_KINDS, type TestRedisTarget } from "../../support/redis-cluster.ts";

const P = "t:";
const C = "tron:mainnet";
const [A, B, D] = fixtures.valid as [string, string, string];
const KINDS = ["wallet.transfer.broadcasted"];
const sub = (id: string, keyId = "key_1", enabled = true) => ({ id, keyId, enabled, events: KINDS });

describe.each(REDIS_KINDS)("Redis %s", (kind) => {
  let target: TestRedisTarget;
  let redis: Redis;
  let index: WatchIndexHandle;

  beforeAll(async () => {
    target = await openTestRedis(kind);
    redis = target.redis;
    index = watchIndexHandle(redis, { prefix: P, chainId: C });
  }, 60_000);

  afterAll(async () => {
    await target?.release();
  }, 60_000);

  beforeEach(async () => {
    await target.flush();
    const { generation } = await beginBuild(index, false);
    await finishBuild(index, generation);
  });

  const ids = async (addresses: string[], includeInactive = false) =>
    Object.fromEntries([...(await lookup(index, addresses, { includeInactive }))].map(([a, ws]) => [a, ws.map((w) => w.subscriptionId).sort()]));

  test("watched addresses come back with their watchers; unwatched ones are absent; duplicates in the block are fine", async () => {
    await applyAddresses(index, sub("sub_a"), true, { add: [A, B], remove: [] });
    await applyAddresses(index, sub("sub_b"), true, { add: [B], remove: [] });
    expect(await ids([A, B, D, B])).toEqual({ [A]: ["sub_a"], [B]: ["sub_a", "sub_b"] });
    expect((await lookup(index, [])).size).toBe(0);
    // Another chain is another index.
    expect((await lookup(watchIndexHandle(redis, { prefix: P, chainId: "tron:nile" }), [A], { waitMs: 0 }).catch((e) => e)) instanceof WatchIndexNotReadyError).toBe(true);
  });

  test("disabled subscriptions, revoked keys and chains off the key never match, but stay listed as inactive", async () => {
    await applyAddresses(index, sub("sub_a"), true, { add: [A], remove: [] });
    await applyAddresses(index, sub("sub_b", "key_2"), true, { add: [A], remove: [] });
    await setSubscriptionMeta(index, sub("sub_a", "key_1", false));
    expect(await ids([A])).toEqual({ [A]: ["sub_b"] });
    await setKeyState(index, "key_2", false);
    expect(await ids([A])).toEqual({});
    expect(await ids([A], true)).toEqual({ [A]: ["sub_a", "sub_b"] });
    const [w] = (await lookup(index, [A], { includeInactive: true })).get(A)!.filter((x) => x.subscriptionId === "sub_b");
    expect(w).toEqual({ subscriptionId: "sub_b", keyId: "key_2", active: false, events: KINDS, match: defaultMatch() });
  });

  test("match conditions travel with status and kinds: written, refreshed, shared per text, per subscription not per address", async () => {
    const usdtOver100: MatchConditions = {
      assets: [{ standard: "TRC20", contract: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", minAmount: "100000000" }],
      directions: ["incoming"],
      includeZeroValue: false,
    };
    await applyAddresses(index, { ...sub("sub_a"), match: usdtOver100 }, true, { add: [A, B], remove: [] });
    await applyAddresses(index, sub("sub_b"), true, { add: [B], remove: [] });
    const found = await lookup(index, [A, B]);
    const [wa] = found.get(A)!;
    const wb = found.get(B)!.find((w) => w.subscriptionId === "sub_a")!;
    expect(wa!.match).toEqual(usdtOver100);
    // One parsed object per distinct text: the matcher's compiled conditions are cached on it.
    expect(wb.match).toBe(wa!.match);
    expect(found.get(B)!.find((w) => w.subscriptionId === "sub_b")!.match).toEqual(defaultMatch());
    // The address fields hold only handles: conditions cost nothing per address.
    const state = await readState(index);
    const buckets = await keysEverywhere(redis, `${P}wi:{${C}:*}:${state.cur}:b:*`);
    for (const v of (await Promise.all(buckets.map((k) => redis.hgetall(k)))).flatMap(Object.values)) expect(v).toMatch(/^[0-9,]+$/);

    // A change of conditions reaches every watcher of the subscription; back to the default stores no text at all.
    const zeroToo: MatchConditions = { ...defaultMatch(), includeZeroValue: true };
    await setSubscriptionMeta(index, { ...sub("sub_a"), match: zeroToo });
    expect((await lookup(index, [A])).get(A)![0]!.match).toEqual(zeroToo);
    await setSubscriptionMeta(index, { ...sub("sub_a"), match: defaultMatch() });
    const metas = await Promise.all((await keysEverywhere(redis, `${P}wi:{${C}:*}:${state.cur}:meta`)).map((k) => redis.hgetall(k)));
    expect(metas.length).toBeGreaterThan(0);
    expect(metas.flatMap(Object.values).every((m) => m.endsWith("|"))).toBe(true);
    expect((await lookup(index, [A])).get(A)![0]!.match).toEqual(defaultMatch());

    // A meta written before match conditions existed (four fields) reads as the default.
    const shardOfA = `${shardBase(P, C, slotOf(A).shard)}${state.cur}:`;
    const handle = await redis.hget(`${shardOfA}sub`, "sub_a");
    await redis.hset(`${shardOfA}meta`, handle!, `sub_a|key_1|e|${KINDS.join(",")}`);
    expect((await lookup(index, [A])).get(A)![0]).toMatchObject({ active: true, events: KINDS, match: defaultMatch() });
  });

  test("a dropped subscription stops matching at once; the sweep removes its fields", async () => {
    await applyAddresses(index, sub("sub_a"), true, { add: [A, B], remove: [] });
    await applyAddresses(index, sub("sub_b"), true, { add: [B], remove: [] });
    await dropSubscription(index, "sub_a");
    expect(await ids([A, B], true)).toEqual({ [B]: ["sub_b"] });
    expect((await readState(index)).dead).toBe(1);
    expect(await sweepDeadHandles(index)).toBe(2);
    expect((await readState(index)).dead).toBe(0);
    const state = await readState(index);
    const fields = await keysEverywhere(redis, `${P}wi:{${C}:*}:${state.cur}:b:*`);
    const values = await Promise.all(fields.map((k) => redis.hgetall(k)));
    expect(values.flatMap((v) => Object.entries(v))).toHaveLength(1);
  });

  test("not ready (never built, emptied, or stale): lookups wait, then throw; they resume when the build finishes", async () => {
    await applyAddresses(index, sub("sub_a"), true, { add: [A], remove: [] });
    await markStale(index);
    await expect(lookup(index, [A], { waitMs: 100 })).rejects.toBeInstanceOf(WatchIndexNotReadyError);
    const waiting = lookup(index, [A], { waitMs: 10_000 });
    const { generation } = await beginBuild(index, true);
    await applyAddresses(index, sub("sub_a"), true, { add: [A], remove: [] }, { generation });
    await finishBuild(index, generation);
    expect([...(await waiting).keys()]).toEqual([A]);
    await target.flush();
    await expect(lookup(index, [A], { waitMs: 100 })).rejects.toBeInstanceOf(WatchIndexNotReadyError);
  });

  test("during a build writers reach both generations; a superseded build cannot swap in", async () => {
    await applyAddresses(index, sub("sub_a"), true, { add: [A], remove: [] });
    const first = await beginBuild(index, false);
    // Served meanwhile: the current generation, kept up to date.
    await applyAddresses(index, sub("sub_b"), true, { add: [B], remove: [] });
    expect(await ids([A, B])).toEqual({ [A]: ["sub_a"], [B]: ["sub_b"] });
    const second = await beginBuild(index, false);
    expect(second.abandoned).toBe(first.generation);
    await expect(finishBuild(index, first.generation)).rejects.toThrow(/superseded/);
    await finishBuild(index, second.generation);
    // The new generation has only what reached it since it began (the rebuild itself copies the rest from PostgreSQL).
    await applyAddresses(index, sub("sub_c"), true, { add: [D], remove: [] });
    expect(await ids([A, B, D])).toEqual({ [D]: ["sub_c"] });
  });

  test("a failure marked during a build keeps the chain stale after that build", async () => {
    const build = await beginBuild(index, true);
    await markStale(index);
    await finishBuild(index, build.generation);
    expect((await readState(index)).stale).toBe(true);
    const again = await beginBuild(index, true);
    await finishBuild(index, again.generation);
    expect((await readState(index)).stale).toBe(false);
  });
});
