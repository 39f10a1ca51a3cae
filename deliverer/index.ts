// createDeliverer: opens the deliverer's database (migrations applied) and Redis, starts the delivery worker, and
// returns its RPC routes and readiness checks. `bun run deliverer` serves it alone (main.ts); `npm start` and the
// tests run it in-process.
import { poolSize } from "../common/db.ts";
import type { Transport } from "@connectrpc/connect";
import { loadAppKeys, loadInternalRoot } from "../common/app-secret.ts";
import { acceptedCallers, type AcceptedCallers } from "../common/internal-auth.ts";
import type { Config } from "../common/config.ts";
import { log } from "../common/logger.ts";
import { openRedis, type Redis } from "../common/redis.ts";
import type { ServiceHandle } from "../common/service.ts";
import { createSsrfPolicy, type Resolver } from "../common/ssrf.ts";
import { watchSchedule } from "./metrics.ts";
import { EventPartitions } from "./partitions.ts";
import { JobRunner } from "../common/jobs.ts";
import { idempotencyPurgeJob } from "../common/idempotency-purge.ts";
import { EVENT_PURGE_JOB, eventPurgeJob, type PurgeOptions } from "./jobs/event-purge.ts";
import { eventPartitionsJob } from "./jobs/event-partitions.ts";
import { Schedule } from "./schedule.ts";
import { createRoutingSender } from "./senders.ts";
import { DeliveryService } from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import { deliveryRoutes } from "./service.ts";
import { StreamWaker, streamEventsHandler, type StreamOptions } from "./stream.ts";
import { openDelivererDatabase, openPlannedReads, PLANNED_READS_POOL_SIZE } from "./db/connection.ts";
import { DelivererStore } from "./db/store.ts";
import { TargetCache } from "./targets.ts";
import { DeliveryWorker, type WorkerOptions } from "./worker/index.ts";

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
  /** StreamEvents tuning (poll interval, page size, key re-check). */
  stream?: StreamOptions;
  /** Background purge of deleted subscriptions' events (batch size, poll interval). */
  purge?: Partial<PurgeOptions>;
}

export interface DelivererHandle extends ServiceHandle {
  /** The callers its RPCs recognise when served on a port (per-caller tokens, or derived from the root). */
  callers: AcceptedCallers;
  store: DelivererStore;
  schedule: Schedule;
  worker: DeliveryWorker;
  partitions: EventPartitions;
  jobs: JobRunner;
  redis: Redis;
}


export async function createDeliverer(config: Config, deps: DelivererDeps): Promise<DelivererHandle> {
  const logger = log.child({ service: "deliverer" });
  // Writes are batched: a small pool serves thousands of deliveries per second.
  const db = await openDelivererDatabase(config.databaseUrl, { max: poolSize(config, 10) });
  const keyring = await loadAppKeys(db.$client, config.appSecret, logger);
  const callers = acceptedCallers(config, await loadInternalRoot(db.$client, config));
  const planned = openPlannedReads(config.databaseUrl, { max: poolSize(config, PLANNED_READS_POOL_SIZE) });
  const store = new DelivererStore(db, keyring, planned);
  const redis = openRedis(config.redisUrl);
  // Connection errors surface on the calls that fail (and in /readyz); openRedis reports them, rate-limited.
  const schedule = new Schedule(redis, { prefix: config.redisPrefix, shards: deps.shards ?? 8 });
  const targets = new TargetCache(deps.registry, deps.targetTtlMs ?? 1_000);
  const sender = createRoutingSender({
    policy: createSsrfPolicy({ allowCidrs: config.ssrfAllowCidrs, resolver: deps.resolver }),
    timeoutMs: config.deliveryTimeoutMs,
    caFile: config.deliveryCaFile,
  });
  const worker = new DeliveryWorker(store, schedule, targets, sender, {
    keyConcurrency: config.quotas.deliveries,
    ...deps.worker,
    retrySchedule: config.retrySchedule,
    timeoutMs: config.deliveryTimeoutMs,
    logger,
  });
  const unwatch = watchSchedule(schedule);
  const waker = new StreamWaker();
  // Today's and the next days' partitions before the first write: after an outage longer than the days made ahead,
  // writes would otherwise land in the default partition until the upkeep ran.
  const partitions = new EventPartitions(db, config.eventRetentionDays, logger);
  if (!(await partitions.prepare())) logger.error("event partitions for today not made; writes go to the default partition until they are");
  if (deps.startWorker !== false) worker.start();

  const jobs = new JobRunner(logger)
    .add(idempotencyPurgeJob(store, logger))
    .add(eventPartitionsJob(partitions))
    .add(eventPurgeJob(store, schedule, logger, deps.purge));
  jobs.start();

  return {
    routes: deliveryRoutes({
      store,
      schedule,
      targets,
      retrySchedule: config.retrySchedule,
      tokenKeys: keyring.tokenKeys,
      wake: () => {
        worker.wake();
        waker.notify();
      },
      reserveMs: worker.leaseMs,
      purge: () => jobs.wake(EVENT_PURGE_JOB),
      streamEvents: streamEventsHandler(store, deps.registry, waker, { perKey: config.quotas.streams, ...deps.stream }),
    }),
    callers,
    // The event log and the schedule are the deliverer's own job. The registry only refreshes delivery targets:
    // while it is away the deliverer keeps delivering with what it has, so it is shown, not required.
    // StreamEvents is for platform services holding a customer API key, not an internal credential: its handler
    // authenticates the key itself (deliverer/stream.ts).
    publicMethods: [DeliveryService.method.streamEvents],
    checks: {
      postgres: () => store.ping(),
      redis: async () => (await redis.ping()) === "PONG",
    },
    informational: {
      registry: () => targets.ping(),
    },
    store,
    schedule,
    worker,
    partitions,
    jobs,
    redis,
    async close() {
      await jobs.stop();
      await worker.stop();
      await sender.close();
      unwatch();
      redis.disconnect();
      await planned.$client.close();
      await db.$client.close();
    },
  };
}
