// A Redis that may evict keys would silently drop watched addresses from the watch index: the registry and the matcher
// refuse to start on one, with an error that says what to change, and on a cluster every master is checked.
// Real redis-servers of this test's own (a private server, a 3-master cluster); the policy is set with CONFIG SET.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { loadConfig } from "../../../common/config.ts";
import { inProcessTransport } from "../../../common/rpc.ts";
import { assertNoEviction, EvictingRedisError } from "../../../common/redis-eviction.ts";
import { openRedis } from "../../../common/redis.ts";
import { createMatcher } from "../../../matcher/index.ts";
import { createRegistry } from "../../../registry/index.ts";
import { startPrivateRedis, startRedisCluster, type TestRedisCluster } from "../../support/redis-cluster.ts";
import Redis from "ioredis";

const configFor = (redisUrl: string) =>
  loadConfig({
    // Never reached: the check comes before the database is opened.
    DATABASE_URL: "postgres://postgres@127.0.0.1:1/none",
    REDIS_URL: redisUrl,
    APP_SECRET: randomBytes(32).toString("base64"),
    MATCHER_CHAINS: "tron:mainnet",
  });

describe("one server", () => {
  let server: { url: string; stop(): Promise<void> };
  let admin: Redis;
  beforeAll(async () => {
    server = await startPrivateRedis();
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });

  test("an evicting policy: the registry and the matcher refuse to start, saying what to set", async () => {
    await admin.config("SET", "maxmemory-policy", "allkeys-lru");
    const registry = createRegistry(configFor(server.url));
    await expect(registry).rejects.toBeInstanceOf(EvictingRedisError);
    await expect(registry).rejects.toThrow(/maxmemory-policy allkeys-lru .*noeviction/);
    await expect(createMatcher(configFor(server.url), { deliverer: inProcessTransport(() => {}) })).rejects.toBeInstanceOf(EvictingRedisError);
    // volatile-* evicts too (any key with a TTL, and a deployment may give index keys one by mistake).
    await admin.config("SET", "maxmemory-policy", "volatile-lru");
    const client = openRedis(server.url);
    await expect(assertNoEviction(client)).rejects.toBeInstanceOf(EvictingRedisError);
    client.disconnect();
  });

  test("noeviction is accepted", async () => {
    await admin.config("SET", "maxmemory-policy", "noeviction");
    const client = openRedis(server.url);
    try {
      await assertNoEviction(client);
    } finally {
      client.disconnect();
    }
  });
});

describe("a cluster", () => {
  let cluster: TestRedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster(3);
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  test("one master of three evicting: refused, naming that master", async () => {
    const client = openRedis(cluster.url);
    try {
      await assertNoEviction(client);
      const node = cluster.nodes[1]!;
      const admin = new Redis(node.port, "127.0.0.1");
      await admin.config("SET", "maxmemory-policy", "allkeys-random");
      admin.disconnect();
      const refused = assertNoEviction(client);
      await expect(refused).rejects.toBeInstanceOf(EvictingRedisError);
      await expect(refused).rejects.toThrow(`allkeys-random on 127.0.0.1:${node.port}`);
      await expect(createRegistry(configFor(cluster.url))).rejects.toBeInstanceOf(EvictingRedisError);
    } finally {
      client.disconnect();
    }
  }, 30_000);
});
