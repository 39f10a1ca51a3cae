// The tests' own Redis DBs (test/support/redis.ts): TEST_REDIS_DBS chooses them, and a DB holding keys no test run
// wrote is skipped, never flushed.
import { describe, expect, test } from "bun:test";
import Redis from "ioredis";
import { allocateRedisDb, describeTestRedis, parseRedisDbs, TEST_REDIS_DBS_SPEC } from "../../support/redis.ts";

describe("TEST_REDIS_DBS", () => {
  test("takes numbers and ranges within 1-15", () => {
    expect(parseRedisDbs("1-15")).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
    expect(parseRedisDbs("9, 3,5-7,5")).toEqual([3, 5, 6, 7, 9]);
    for (const bad of ["0", "0-3", "16", "4-2", "a", "", "1,,2", "-3"]) expect(() => parseRedisDbs(bad)).toThrow(/TEST_REDIS_DBS/);
  });

  test("the run says which DBs it uses", () => {
    expect(describeTestRedis()).toMatch(/DBs \S+ of redis:\/\/.+ \(TEST_REDIS_DBS\)/);
    const run = Bun.spawnSync([process.execPath, "test", "test/unit/common/tron-address.test.ts"], {
      cwd: `${import.meta.dir}/../../..`,
      env: { ...process.env, TEST_REDIS_DBS: "4-6" },
    });
    expect(run.stdout.toString() + run.stderr.toString()).toContain("test Redis: DBs 4-6 of");
  });
});

describe("allocateRedisDb", () => {
  test("skips a DB holding someone else's keys and leaves them alone", async () => {
    // Take a DB the usual way (the highest free one: other runs start from the lowest), then make it look like
    // someone else's: a key of theirs, no mark of ours, no lease.
    const mine = await allocateRedisDb({ dbs: parseRedisDbs(TEST_REDIS_DBS_SPEC).reverse() });
    const base = mine.url.slice(0, mine.url.lastIndexOf("/"));
    const their = new Redis(mine.url);
    const control = new Redis(`${base}/0`);
    const key = `someone-else:${process.pid}:${Date.now()}`;
    try {
      await their.set(key, "precious");
      await control.srem("test:redis-dbs-ours", String(mine.db));
      await control.del(`test:redis-db-lease:${mine.db}`);

      const attempt = allocateRedisDb({ dbs: [mine.db], waitMs: 300 });
      await expect(attempt).rejects.toThrow(new RegExp(`skipped for holding others' keys: ${mine.db}\\b`));
      expect(await their.get(key)).toBe("precious");
    } finally {
      await their.del(key);
      their.disconnect();
      control.disconnect();
    }
  });

  test("flushes what a run of ours left behind, and hands the DB back empty", async () => {
    const first = await allocateRedisDb({ dbs: parseRedisDbs(TEST_REDIS_DBS_SPEC).reverse() });
    const client = new Redis(first.url);
    try {
      await client.set("left-by-a-crashed-run", "1");
      // A run that died keeps its mark but loses its lease.
      const control = new Redis(`${first.url.slice(0, first.url.lastIndexOf("/"))}/0`);
      await control.del(`test:redis-db-lease:${first.db}`);
      control.disconnect();

      const second = await allocateRedisDb({ dbs: [first.db], waitMs: 5_000 });
      expect(await client.dbsize()).toBe(0);
      await client.set("written-in-the-test", "1");
      await second.release();
      expect(await client.dbsize()).toBe(0);
    } finally {
      client.disconnect();
    }
  });
});
