// createDeliverer: opens the deliverer's database (migrations applied) and Redis, starts the delivery worker, and
// returns its RPC routes and readiness checks. `bun run deliverer` serves it alone (main.ts); `npm start` and the
// tests run it in-process.
import type { Transport } from "@connectrpc/connect";
import { loadAppKeys, loadInternalToken } from "../common/app-secret.ts";
import type { Config } from "../common/config.ts";
import { log } from "../common/logger.ts";
import { openRedis, type Redis } from "../common/redis.ts";
import type { ServiceHandle } from "../common/service.ts";
import { createSsrfPolicy, type Resolver } from "../common/ssrf.ts";
import { watchSchedule } from "./metrics.ts";
import { Schedule } from "./schedule.ts";
import { createSender } from "./send.ts";
import { deliveryRoutes } from "./service.ts";
import { DelivererStore, openDelivererDatabase } from "./store.ts";
import { TargetCache } from "./targets.ts";
import { DeliveryWorker, type WorkerOptions } from "./worker.ts";

export interface DelivererDeps {
  /** The registry (SubscriptionService.GetDeliveryTargets). */
  registry: Transport;
  /** DNS resolver for the per-attempt SSRF check (tests inject one to stage DNS rebinding). */
  resolver?: Resolver;
  /** Worker tuning (concurrency, per-host limit, batch sizes); defaults suit production. */
  worker?: Partial<Omit<WorkerOptions, "retrySchedule" | "timeoutMs">>;
  /** Schedule shards (`schedule:{n}`); every replica must use the same number. Default 8. */
  shards?: number;
  /** Run the delivery worker (default true); false serves the RPCs only. */
  startWorker?: boolean;
  /** How long delivery targets are cached (default 1 s). */
  targetTtlMs?: number;
}

export interface DelivererHandle extends ServiceHandle {
  /** What its RPCs require when served on a port: INTERNAL_TOKEN, or the one kept in the database. */
  internalToken: string;
  store: DelivererStore;
  schedule: Schedule;
  worker: DeliveryWorker;
  redis: Redis;
}

const PURGE_INTERVAL_MS = 10 * 60_000;

export async function createDeliverer(config: Config, deps: DelivererDeps): Promise<DelivererHandle> {
  const logger = log.child({ service: "deliverer" });
  // Writes are batched: a small pool serves thousands of deliveries per second.
  const db = await openDelivererDatabase(config.databaseUrl, { max: 10 });
  const appKeys = await loadAppKeys(db.$client, config.appSecret);
  const internalToken = await loadInternalToken(db.$client, config.internalToken);
  const store = new DelivererStore(db, appKeys.encryptionKey);
  const redis = openRedis(config.redisUrl);
  // Connection errors surface on the calls that fail (and in /readyz); log them once per outage, not per retry.
  let redisDown = false;
  redis.on("error", (err) => {
    if (!redisDown) logger.warn("redis unavailable", { err });
    redisDown = true;
  });
  redis.on("ready", () => {
    redisDown = false;
  });
  const schedule = new Schedule(redis, { prefix: config.redisPrefix, shards: deps.shards ?? 8 });
  const targets = new TargetCache(deps.registry, deps.targetTtlMs ?? 1_000);
  const sender = createSender({
    policy: createSsrfPolicy({ allowCidrs: config.ssrfAllowCidrs, resolver: deps.resolver }),
    timeoutMs: config.deliveryTimeoutMs,
    caFile: config.deliveryCaFile,
  });
  const worker = new DeliveryWorker(store, schedule, targets, sender, {
    ...deps.worker,
    retrySchedule: config.retrySchedule,
    timeoutMs: config.deliveryTimeoutMs,
    logger,
  });
  const unwatch = watchSchedule(schedule);
  if (deps.startWorker !== false) worker.start();

  const purge = async () => {
    try {
      await store.purgeExpiredIdempotency();
    } catch (err) {
      logger.warn("idempotency purge failed", { err });
    }
  };
  void purge();
  const timer = setInterval(purge, PURGE_INTERVAL_MS);
  timer.unref?.();

  return {
    routes: deliveryRoutes({
      store,
      schedule,
      targets,
      retrySchedule: config.retrySchedule,
      tokenKey: appKeys.tokenKey,
      wake: () => worker.wake(),
      reserveMs: worker.leaseMs,
    }),
    internalToken,
    checks: {
      postgres: () => store.ping(),
      redis: async () => (await redis.ping()) === "PONG",
      registry: () => targets.ping(),
    },
    store,
    schedule,
    worker,
    redis,
    async close() {
      clearInterval(timer);
      await worker.stop();
      unwatch();
      redis.disconnect();
      await db.$client.close();
    },
  };
}
