// REDIS_URL's cluster form and WATCH_INDEX_SHARDS as common/redis.ts and common/config.ts read them, and the watch
// index's shard placement (common/watch-index/layout.ts): bad input is refused at start, never guessed.
import { expect, test } from "bun:test";
import { loadConfig } from "../../../common/config.ts";
import { parseClusterUrl } from "../../../common/redis.ts";
import { bucketsPerShard, shardBase, slotOf, TOTAL_BUCKETS } from "../../../common/watch-index/layout.ts";
import fixtures from "../../../fixtures/tron/addresses.json";

test("redis+cluster:// names seed nodes, credentials and TLS; a plain redis:// URL is one server", () => {
  expect(parseClusterUrl("redis://127.0.0.1:6379/3")).toBeNull();
  expect(parseClusterUrl("redis+cluster://127.0.0.1:7000,127.0.0.1:7001")).toEqual({
    nodes: [{ host: "127.0.0.1", port: 7000 }, { host: "127.0.0.1", port: 7001 }],
    username: undefined,
    password: undefined,
    tls: false,
  });
  expect(parseClusterUrl("rediss+cluster://app:s%40cret@[::1]:7000/")).toEqual({
    nodes: [{ host: "::1", port: 7000 }],
    username: "app",
    password: "s@cret",
    tls: true,
  });
  expect(parseClusterUrl("redis+cluster://:pw@localhost:7000")?.password).toBe("pw");
  expect(() => parseClusterUrl("redis+cluster://127.0.0.1")).toThrow(/host:port/);
  expect(() => parseClusterUrl("redis+cluster://127.0.0.1:7000/2")).toThrow(/cluster URL/);
});

test("WATCH_INDEX_SHARDS: default 16, an integer from 1 to 1024, anything else refused", () => {
  expect(loadConfig({}).watchIndexShards).toBe(16);
  expect(loadConfig({ WATCH_INDEX_SHARDS: "4" }).watchIndexShards).toBe(4);
  for (const bad of ["0", "1025", "2.5", "-3", "many"]) expect(() => loadConfig({ WATCH_INDEX_SHARDS: bad })).toThrow(/WATCH_INDEX_SHARDS/);
});

test("an address has one shard and bucket for a given shard count; the count is part of every key's hash tag", () => {
  const addresses = fixtures.valid as string[];
  for (const shards of [1, 3, 16]) {
    for (const a of addresses) {
      const { shard, bucket } = slotOf(a, shards);
      expect(shard).toBeGreaterThanOrEqual(0);
      expect(shard).toBeLessThan(shards);
      expect(bucket).toBeLessThan(bucketsPerShard(shards));
      expect(slotOf(a, shards)).toEqual({ shard, bucket });
    }
  }
  expect(bucketsPerShard(16) * 16).toBe(TOTAL_BUCKETS);
  expect(shardBase("whk:", "tron:mainnet", 3, 16)).toBe("whk:wi:{tron:mainnet:3/16}:");
  expect(shardBase("whk:", "tron:mainnet", 3, 32)).not.toBe(shardBase("whk:", "tron:mainnet", 3, 16));
});
