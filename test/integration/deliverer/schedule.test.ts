// The Redis schedule (real Redis): due ids are claimed once while leased, concurrent claimers never share an id,
// an expired lease comes back, nothing is lost; reservations and rebuild additions never double a live lease.
// Against one Redis server and against a real 3-master Redis Cluster (the shards' hash tags spread over its nodes).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Redis } from "../../../common/redis.ts";
import { Schedule } from "../../../deliverer/schedule.ts";
import { openTestRedis, REDIS_KINDS, type TestRedisTarget } from "../../support/redis-cluster.ts";

describe.each(REDIS_KINDS)("Redis %s", (kind) => {
  let target: TestRedisTarget;
  let redis: Redis;
  let schedule: Schedule;

  beforeAll(async () => {
    target = await openTestRedis(kind);
    redis = target.redis;
    schedule = new Schedule(redis, { prefix: "t:", shards: 4 });
  }, 60_000);

  afterAll(async () => {
    await target?.release();
  }, 60_000);

  const ids = (n: number, p = "e") => Array.from({ length: n }, (_, i) => `${p}${i}`);

  test("only due ids are claimed; concurrent claimers get disjoint sets; all ids claimed exactly once", async () => {
    await target.flush();
    const now = Date.now();
    await schedule.add(ids(1_000).map((id) => ({ id, dueMs: now - 10 })));
    await schedule.add(ids(100, "later").map((id) => ({ id, dueMs: now + 60_000 })));
    const results = await Promise.all(Array.from({ length: 6 }, async () => {
      const got: string[] = [];
      for (;;) {
        const c = await schedule.claim(Date.now(), Date.now() + 60_000, 64);
        if (c.ids.length === 0) break;
        got.push(...c.ids);
      }
      return got;
    }));
    const all = results.flat();
    expect(all.length).toBe(1_000);
    expect(new Set(all).size).toBe(1_000);
    expect(all.some((id) => id.startsWith("later"))).toBe(false);
    const st = await schedule.stats();
    expect(st).toMatchObject({ due: 100, leased: 1_000 });
  });

  test("an expired lease comes back (reclaimed); a live one does not", async () => {
    await target.flush();
    const now = Date.now();
    await schedule.add([{ id: "a", dueMs: now - 1 }, { id: "b", dueMs: now - 1 }]);
    const first = await schedule.claim(now, now + 200, 10);
    expect(first.ids.sort()).toEqual(["a", "b"]);
    // The claims' clocks are given, not read: on a loaded machine 200 ms of wall time may pass between two calls.
    expect((await schedule.claim(now + 100, now + 300, 10)).ids).toEqual([]);
    const again = await schedule.claim(now + 250, now + 60_000, 10);
    expect(again.ids.sort()).toEqual(["a", "b"]);
    expect(again.reclaimed).toBe(2);
  });

  test("moveToDue ends a lease; remove drops an id from both sets; addMissing skips leased and due ids", async () => {
    await target.flush();
    const now = Date.now();
    await schedule.reserve(["r1", "r2"], now + 60_000);
    await schedule.moveToDue([{ id: "r1", dueMs: now - 1 }]);
    expect((await schedule.claim(now, now + 60_000, 10)).ids).toEqual(["r1"]);
    expect(await schedule.addMissing([{ id: "r1", dueMs: now }, { id: "r2", dueMs: now }, { id: "r3", dueMs: now }])).toBe(1);
    await schedule.remove(["r1", "r2", "r3"]);
    expect(await schedule.stats()).toMatchObject({ due: 0, leased: 0 });
  });
});
