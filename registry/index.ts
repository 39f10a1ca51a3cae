// createRegistry: opens the registry's database (migrations applied) and Redis, and returns its RPC routes and
// readiness checks. `bun run registry` serves it alone (main.ts); `npm start` and the tests run it in-process.
import { JobRunner } from "../common/jobs.ts";
import { idempotencyPurgeJob } from "../common/idempotency-purge.ts";
import { loadAppKeys, loadInternalRoot } from "../common/app-secret.ts";
import { poolSize } from "../common/db.ts";
import type { Config } from "../common/config.ts";
import type { ChainId } from "../common/contract/index.ts";
import { NodeChainView } from "./backfill-range.ts";
import type { Keyring } from "../common/keyring.ts";
import { acceptedCallers, type AcceptedCallers } from "../common/internal-auth.ts";
import { log } from "../common/logger.ts";
import { refuseEvictingRedis } from "../common/redis-eviction.ts";
import { openRedis, type Redis } from "../common/redis.ts";
import type { ServiceHandle } from "../common/service.ts";
import { checkDestinationUrl, createSsrfPolicy, type Resolver } from "../common/ssrf.ts";
import { registryRoutes, type AddressRpcs, type RegistryContext } from "./service.ts";
import { openRegistryDatabase, openRegistryReadPool, READ_POOL_SIZE } from "./db/connection.ts";
import { RegistryStore } from "./db/store.ts";
import { addressRpcs } from "./addresses.ts";
import { WatchIndex } from "./watch-index/index.ts";

export interface RegistryDeps {
  /** DNS resolver for the request-time SSRF check (tests inject a static one). */
  resolver?: Resolver;
  /** Overrides of config.tronNodeUrls, where backfill ranges are resolved (tests and the demo: tools/tron-sim). */
  nodeUrls?: Partial<Record<ChainId, string>>;
}

export interface RegistryHandle extends ServiceHandle {
  store: RegistryStore;
  redis: Redis;
  keyring: Keyring;
  /** The callers its RPCs recognise when served on a port (per-caller tokens, or derived from the root). */
  callers: AcceptedCallers;
  /** The handler context; address filters and the watch index plug in here. */
  context: RegistryContext;
  watchIndex: WatchIndex;
}


export async function createRegistry(config: Config, deps: RegistryDeps = {}): Promise<RegistryHandle> {
  const redis = openRedis(config.redisUrl);
  // An evicting Redis would drop watched addresses from the index without a trace: refused before anything opens.
  await refuseEvictingRedis(redis, log.child({ service: "registry" })).catch((err) => {
    redis.disconnect();
    throw err;
  });
  const db = await openRegistryDatabase(config.databaseUrl, { max: poolSize(config, 20) });
  const keyring = await loadAppKeys(db.$client, config.appSecret, log.child({ service: "registry" }));
  const callers = acceptedCallers(config, await loadInternalRoot(db.$client, config));
  const store = new RegistryStore(db, { keyring, readDb: openRegistryReadPool(config.databaseUrl, poolSize(config, READ_POOL_SIZE)) });
  const policy = createSsrfPolicy({ allowCidrs: config.ssrfAllowCidrs, resolver: deps.resolver });
  // The watch index: fed by the outbox rows every index-changing write commits with, applied per chain in order;
  // rebuilt at start when missing (in the background: lookups wait meanwhile) and when Redis lost it.
  const watchIndex = new WatchIndex(db, redis, config.redisPrefix, log.child({ service: "registry", part: "watch-index" }), undefined, {
    shards: config.watchIndexShards,
    retentionMs: config.watchOutboxRetentionMs,
    verifyMs: config.watchIndexVerifyMs,
  });
  const addresses: AddressRpcs = addressRpcs({
    store,
    index: watchIndex,
    tokenKeys: keyring.tokenKeys,
    maxPerSubscription: config.maxAddressesPerSubscription,
    quotas: config.quotas,
  });
  watchIndex.start();
  const context: RegistryContext = {
    store,
    tokenKeys: keyring.tokenKeys,
    checkDestination: async (url) => (await checkDestinationUrl(policy, url)).url.href,
    index: watchIndex,
    addresses,
    quotas: config.quotas,
    backfill: { chains: new NodeChainView(config, deps.nodeUrls), limits: config.backfill },
    log: log.child({ service: "registry" }),
  };

  const jobs = new JobRunner(context.log).add(idempotencyPurgeJob(store, context.log));
  jobs.start();

  return {
    routes: registryRoutes(context),
    callers,
    // Keys and subscriptions live in PostgreSQL; without Redis every write still commits (its outbox rows are applied
    // to the watch index when Redis answers), so Redis is shown, not required.
    checks: {
      postgres: () => store.ping(),
    },
    informational: {
      redis: async () => (await redis.ping()) === "PONG",
    },
    store,
    redis,
    keyring,
    context,
    watchIndex,
    async close() {
      await jobs.stop();
      await watchIndex.stop();
      redis.disconnect();
      await store.close();
    },
  };
}
