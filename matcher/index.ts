// createMatcher: two streams per chain in MATCHER_CHAINS — the head (broadcasted) and the solidified head
// (confirmed, failed) sharing a block cache — both behind the chain's lease (a second replica waits for it),
// reading a java-tron node, matching through the Redis watch index and handing events to the deliverer. Under the
// same lease, the re-matcher (rematch.ts) serves the registry's requests after a repair of the index.
// `bun run matcher` serves it alone (main.ts); `npm start` and the tests run it in-process.
import { createClient, type Transport } from "@connectrpc/connect";
import { sql } from "drizzle-orm";
import { DeliveryService, type NewEvent } from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import type { ChainId } from "../common/contract/index.ts";
import type { Config } from "../common/config.ts";
import { PROBE_DEADLINE_MS } from "../common/deadlines.ts";
import { log as rootLog } from "../common/logger.ts";
import { openRedis, type Redis } from "../common/redis.ts";
import { refuseEvictingRedis } from "../common/redis-eviction.ts";
import type { ServiceHandle } from "../common/service.ts";
import { WatchIndexReader } from "../common/watch-index/reader.ts";
import { BackfillScanner } from "./backfill/scanner.ts";
import { StreamLink } from "./block-cache.ts";
import { acquireChainLease, type ChainLease } from "./lease.ts";
import type { WatchLookup } from "./match.ts";
import * as m from "./metrics.ts";
import { NodeHealth } from "./node-health.ts";
import { Rematcher } from "./rematch.ts";
import { SolidifiedStream, type SolidProgress } from "./solid-stream.ts";
import { ChainStream, type Progress } from "./stream.ts";
import { sleep } from "../common/timing.ts";
import { LeaseLostError, openMatcherDatabase, type MatcherDb } from "./store.ts";
import { TronClient, TronNodeError } from "../common/tron-node/client.ts";

export interface MatcherDeps {
  /** Where Enqueue goes: in-process in `npm start`, networkTransport(config.delivererUrl) alone. */
  deliverer: Transport;
  /** Overrides of config.tronNodeUrls (tests and the demo point chains at tools/tron-sim). */
  nodeUrls?: Partial<Record<ChainId, string>>;
  /** Stream tuning (tests, benchmark); `solidified: false` runs the head stream alone (the benchmark's baseline). */
  stream?: { batchSize?: number; concurrency?: number; enqueueEvents?: number; blockIntervalMs?: number; leaseRetryMs?: number; solidified?: boolean };
  /** History scanner tuning (tests): a job's lease and the polling interval for new jobs (backfill/scanner.ts). */
  backfill?: { leaseMs?: number; pollMs?: number };
  /** false: decode transfers only, no account activity (the matcher benchmark's baseline). */
  activities?: boolean;
}

export interface MatcherHandle extends ServiceHandle {
  db: MatcherDb;
  redis: Redis;
  /** Where each chain's stream stands (null until it has processed a block under its lease). */
  progress(chainId: ChainId): Progress | null;
  /** Resolves once the chain's checkpoint reaches `number` (rejects after `timeoutMs`). */
  waitForBlock(chainId: ChainId, number: number, timeoutMs?: number): Promise<Progress>;
  /** Where each chain's solidified stream stands (null until it has processed a block). */
  solidProgress(chainId: ChainId): SolidProgress | null;
  /** Resolves once the chain's solidified checkpoint reaches `number` (rejects after `timeoutMs`). */
  waitForSolidified(chainId: ChainId, number: number, timeoutMs?: number): Promise<SolidProgress>;
}

/** Per chain, the newest progress of a stream and who waits for it to reach a block. */
function progressBoard<P extends { number: number }>(what: string) {
  const progress = new Map<ChainId, P>();
  const waiters = new Set<{ chainId: ChainId; number: number; resolve: (p: P) => void }>();
  return {
    get: (chainId: ChainId) => progress.get(chainId) ?? null,
    set(chainId: ChainId, p: P) {
      progress.set(chainId, p);
      for (const w of waiters) {
        if (w.chainId === chainId && p.number >= w.number) {
          waiters.delete(w);
          w.resolve(p);
        }
      }
    },
    wait(chainId: ChainId, number: number, timeoutMs = 30_000): Promise<P> {
      const now = progress.get(chainId);
      if (now && now.number >= number) return Promise.resolve(now);
      return new Promise((resolve, reject) => {
        const w = { chainId, number, resolve: (p: P) => (clearTimeout(t), resolve(p)) };
        const t = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`the matcher's ${what} did not reach block ${number} of ${chainId} within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(w);
      });
    },
  };
}

/** How often a replica whose node has not answered yet asks it again (besides the stream's own requests). */
const NODE_PROBE_INTERVAL_MS = 10_000;

export async function createMatcher(config: Config, deps: MatcherDeps): Promise<MatcherHandle> {
  const log = rootLog.child({ service: "matcher" });
  const redis = openRedis(config.redisUrl);
  // An evicting Redis would drop watched addresses from the index without a trace: refused before anything opens.
  await refuseEvictingRedis(redis, log).catch((err) => {
    redis.disconnect();
    throw err;
  });
  // Not capped by DATABASE_POOL_MAX: each chain's streams hold connections while they wait on one another, and a
  // smaller pool stalled the solidified stream (matcher.solid-canonical).
  const db = await openMatcherDatabase(config.databaseUrl, { max: config.matcherChains.length + 4 });
  const deliverer = createClient(DeliveryService, deps.deliverer);
  const stop = new AbortController();
  const heads = progressBoard<Progress>("head stream");
  const solids = progressBoard<SolidProgress>("solidified stream");

  const nodes = new NodeHealth(log);
  // Every series exists from the start: lag unknown (NaN) and the node down until it answers, so an alert on lag or
  // on matcher_node_up fires for a matcher that never reached its node.
  for (const chain of config.matcherChains) {
    m.nodeUp.set({ chain }, 0);
    m.lagBlocks.set({ chain }, Number.NaN);
    m.lagSeconds.set({ chain }, Number.NaN);
  }

  // Lookups wait for Redis to hold what PostgreSQL says was applied before them (common/watch-index/README.md).
  const index = new WatchIndexReader(redis, db, { prefix: config.redisPrefix, shards: config.watchIndexShards });
  const watchLookup: WatchLookup = (chainId, addresses) => index.lookup(chainId, addresses);
  const enqueue = async (events: NewEvent[]) => {
    await deliverer.enqueue({ events });
  };


  const runChain = async (chainId: ChainId) => {
    const chainLog = log.child({ chain: chainId });
    // Label children bound once per endpoint: prom-client hashes a label object on every unbound call.
    const nodeUp = m.nodeUp.labels({ chain: chainId });
    const nodeUrl = deps.nodeUrls?.[chainId] ?? config.tronNodeUrls[chainId];
    const node = nodes.forChain(chainId, nodeUrl);
    const bound = new Map<string, { ok: { inc(): void }; error: { inc(): void }; latency: { observe(v: number): void } }>();
    const observe = (endpoint: string, ok: boolean, seconds: number) => {
      let b = bound.get(endpoint);
      if (!b) {
        b = {
          ok: m.nodeRequests.labels({ chain: chainId, endpoint, outcome: "ok" }),
          error: m.nodeRequests.labels({ chain: chainId, endpoint, outcome: "error" }),
          latency: m.nodeLatency.labels({ chain: chainId, endpoint }),
        };
        bound.set(endpoint, b);
      }
      nodeUp.set(ok ? 1 : 0);
      node.observe(ok);
      (ok ? b.ok : b.error).inc();
      b.latency.observe(seconds);
    };
    const clientOptions = {
      baseUrl: nodeUrl,
      ...(config.trongridApiKey ? { apiKey: config.trongridApiKey } : {}),
    };
    const client = new TronClient({ ...clientOptions, observe });
    // A standby replica (another one holds the lease) asks the node nothing, yet must become ready — a rolling
    // update waits for it: ask for the head until the node has answered once.
    void (async () => {
      while (!stop.signal.aborted && !node.answered) {
        try {
          await client.getNowBlock();
        } catch (err) {
          if (err instanceof TronNodeError) node.failed(err);
        }
        if (!node.answered) await sleep(NODE_PROBE_INTERVAL_MS, stop.signal);
      }
    })();

    const { solidified = true, leaseRetryMs = 1_000, ...tuning } = deps.stream ?? {};
    const pollMs = config.matcherPollMs !== undefined ? { pollMs: config.matcherPollMs } : {};
    while (!stop.signal.aborted) {
      m.leaseHeld.set({ chain: chainId }, 0);
      const lease: ChainLease | null = await acquireChainLease(db.$client, chainId, {
        signal: stop.signal,
        retryMs: leaseRetryMs,
        onWait: () => chainLog.info("another replica streams this chain; waiting for its lease"),
      });
      if (!lease) break;
      m.leaseHeld.set({ chain: chainId }, 1);
      chainLog.info("lease acquired; streaming");
      // Both streams run under the lease; either one losing it (or failing for good) stops the other.
      const both = new AbortController();
      const onStop = () => both.abort();
      stop.signal.addEventListener("abort", onStop, { once: true });
      const link = solidified ? new StreamLink(chainId) : undefined;
      // The newest block each stream is matching (its lookups may predate a repair): the re-matcher covers it.
      const matching = { head: 0, solidified: 0 };
      const activity = deps.activities === false ? null : { chainId, blacklistContracts: config.blacklistContracts[chainId] };
      const common = { chainId, client, activity, db, lookup: watchLookup, enqueue, ...pollMs, ...tuning };
      const stream = new ChainStream({
        ...common,
        log: chainLog.child({ stream: "head" }),
        ...(link ? { link } : {}),
        onCheckpoint: (p) => heads.set(chainId, p),
        onMatching: (to) => (matching.head = to),
        onNodeError: (err) => node.failed(err),
      });
      const solid = link
        ? new SolidifiedStream({
            ...common,
            log: chainLog.child({ stream: "solidified" }),
            link,
            ...(config.matcherConfirmations !== undefined ? { confirmations: config.matcherConfirmations } : {}),
            onCheckpoint: (p) => solids.set(chainId, p),
            onMatching: (to) => (matching.solidified = to),
          })
        : undefined;
      // Re-matches after a repair of the watch index (rematch.ts), under the same lease; it retries by itself.
      const rematch = new Rematcher({
        chainId,
        client,
        activity,
        db,
        lookup: watchLookup,
        enqueue,
        log: chainLog.child({ part: "rematch" }),
        matching: () => matching,
        ...(tuning.concurrency !== undefined ? { concurrency: tuning.concurrency } : {}),
        ...(tuning.enqueueEvents !== undefined ? { enqueueEvents: tuning.enqueueEvents } : {}),
      });
      // Backfill jobs, under the same lease: history waits while either live stream is behind the node.
      const backfills = new BackfillScanner({
        chainId,
        client,
        activity,
        db,
        lookup: watchLookup,
        enqueue: (events) => deliverer.enqueue({ events }),
        log: chainLog.child({ part: "backfill" }),
        nodeConcurrency: config.backfill.nodeConcurrency,
        perKey: config.backfill.concurrencyPerKey,
        liveLag: () =>
          link === undefined
            ? 0
            : Math.max(link.head - (heads.get(chainId)?.number ?? link.head), link.solidHead - Math.max(0, link.solidNext - 1)),
        ...deps.backfill,
        ...(tuning.enqueueEvents !== undefined ? { enqueueEvents: tuning.enqueueEvents } : {}),
      });
      const runOne = async (run: () => Promise<void>) => {
        try {
          await run();
        } finally {
          both.abort();
        }
      };
      try {
        await Promise.all([
          runOne(() => stream.run(lease, both.signal)),
          ...(solid ? [runOne(() => solid.run(lease, both.signal))] : []),
          rematch.run(both.signal),
          backfills.run(both.signal),
        ]);
      } catch (err) {
        if (err instanceof LeaseLostError) chainLog.warn("lease lost; waiting to re-acquire");
        else chainLog.error("stream stopped unexpectedly; restarting", { err });
        await Bun.sleep(500);
      } finally {
        stop.signal.removeEventListener("abort", onStop);
        await lease.release();
        m.leaseHeld.set({ chain: chainId }, 0);
      }
    }
  };

  const running = config.matcherChains.map((chainId) => runChain(chainId));

  return {
    routes: () => {},
    // The matcher's job is following its chains: the checkpoint and lease (PostgreSQL), the watch index (Redis) and a
    // node that has answered. A deliverer outage only holds the checkpoint back (nothing is lost), so it is shown.
    checks: {
      postgres: async () => {
        await db.execute(sql`SELECT 1`);
        return true;
      },
      redis: async () => (await redis.ping()) === "PONG",
      node: async () => nodes.anyAnswered(),
    },
    informational: {
      // The deliverer answers an empty Enqueue without touching anything.
      deliverer: async () => {
        await deliverer.enqueue({ events: [] }, { timeoutMs: PROBE_DEADLINE_MS });
        return true;
      },
    },
    db,
    redis,
    progress: heads.get,
    waitForBlock: heads.wait,
    solidProgress: solids.get,
    waitForSolidified: solids.wait,
    async close() {
      stop.abort();
      // A request to an unreachable node may still be retrying: give the streams a moment, then close anyway (closing
      // the pool ends the lease connections, which frees the locks).
      await Promise.race([Promise.allSettled(running), Bun.sleep(3_000)]);
      redis.disconnect();
      await db.$client.close();
    },
  };
}
