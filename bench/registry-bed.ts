// What the delivery benchmarks (bench/delivery.ts, bench/delivery-queues.ts) start alike: their own database and
// Redis DB, the registry in this process with an API key and a subscription client, and the teardown of all three.
import { randomBytes } from "node:crypto";
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { loadConfig, type Config } from "../common/config.ts";
import { inProcessTransport } from "../common/rpc.ts";
import { staticResolver } from "../common/ssrf.ts";
import { ApiKeyService, SubscriptionService, type CreateApiKeyResponse } from "../gen/webhooks/registry/v1/registry_pb.ts";
import { createRegistry, type RegistryHandle } from "../registry/index.ts";
import { createTestDatabase, type TestDatabase } from "../test/support/db.ts";
import { allocateRedisDb, type TestRedis } from "../test/support/redis.ts";

export interface BenchRegistry {
  database: TestDatabase;
  redisDb: TestRedis;
  config: Config;
  registry: RegistryHandle;
  registryTransport: Transport;
  subs: Client<typeof SubscriptionService>;
  /** An API key for every chain. */
  key: CreateApiKeyResponse;
  close(): Promise<void>;
}

export async function startBenchRegistry(label: string, env: Record<string, string> = {}): Promise<BenchRegistry> {
  const database = await createTestDatabase(label);
  const redisDb = await allocateRedisDb();
  const config = loadConfig({
    DATABASE_URL: database.url,
    REDIS_URL: redisDb.url,
    REDIS_PREFIX: "bench:",
    APP_SECRET: randomBytes(32).toString("base64"),
    ...env,
  });
  const registry = await createRegistry(config, { resolver: staticResolver({}) });
  const registryTransport = inProcessTransport(registry.routes);
  const key = await createClient(ApiKeyService, registryTransport).createApiKey({ name: "bench", chains: [] });
  return {
    database,
    redisDb,
    config,
    registry,
    registryTransport,
    subs: createClient(SubscriptionService, registryTransport),
    key,
    async close() {
      await registry.close();
      await redisDb.release();
      await database.drop();
    },
  };
}
