// One chain's history scanner: runs the backfill jobs this replica holds (jobs.ts) in one shared pass, oldest block
// first. A run is up to 100 consecutive blocks that some job still needs, read with one getblockbylimitnext and
// their transaction infos (each block fetched once however many jobs want it), looked up in the watch index once per
// block, and matched for each job with the live streams' code (match.ts buildEvents: broadcasted and confirmed for a
// successful transfer, failed for the rest, as for a solidified block), keeping only the job's subscription and
// addresses and marking each event with the job's id. The events go to the deliverer in block order (EnqueueBatch),
// and only once every call was accepted does each job's checkpoint move: a crash scans the run again, and the
// deliverer's one event per (subscription, kind, transfer) makes that harmless.
//
// History never slows the live streams: its node requests are capped per chain (BACKFILL_NODE_CONCURRENCY), and no
// run starts while the head stream is behind the node's head.
import type { ActivityDecodeOptions } from "../activity/types.ts";
import { randomUUID } from "node:crypto";
import type { NewEvent } from "../../gen/webhooks/delivery/v1/delivery_pb.ts";
import type { ChainId } from "../../common/contract/index.ts";
import type { Logger } from "../../common/logger.ts";
import type { Watcher } from "../../common/watch-index/layout.ts";
import { EnqueueBatch } from "../enqueue-batch.ts";
import { decoded, infosFor, mapLimit, type DecodedBlock } from "../fetch.ts";
import { BROADCASTED, CONFIRMED, FAILED } from "../../common/contract/index.ts";
import { buildEvents, succeeded, touchedAddresses, type BlockContext, type WatchLookup } from "../match.ts";
import { buildActivityEvents } from "../activity/events.ts";
import type { MatcherDb } from "../store.ts";
import { sleep } from "../../common/timing.ts";
import { stepRetryDelay } from "../stream.ts";
import { MAX_BLOCKS_PER_RANGE, type TronClient } from "../../common/tron-node/client.ts";
import { advanceJob, claimJobs, failJob, releaseJobs, type BackfillJob } from "./jobs.ts";
import { blocksScanned, historyRequests } from "./metrics.ts";

export interface EnqueueOutcome {
  /** Per event: its id (the existing one for a duplicate), "" when its subscription no longer takes events. */
  eventIds: string[];
  /** Per event: whether this call created it. */
  made: boolean[];
}

export interface BackfillScannerOptions {
  chainId: ChainId;
  client: TronClient;
  /** How the chain's account activity is decoded; null: transfers only. */
  activity: ActivityDecodeOptions | null;
  db: MatcherDb;
  lookup: WatchLookup;
  enqueue: (events: NewEvent[]) => Promise<EnqueueOutcome>;
  log: Logger;
  /** BACKFILL_NODE_CONCURRENCY: history requests in flight on this chain. */
  nodeConcurrency: number;
  /** BACKFILL_CONCURRENCY_PER_KEY. */
  perKey: number;
  /** How many blocks the live streams are behind the node (the larger of the two): no run starts above 2. */
  liveLag: () => number;
  /** A job's lease; renewed every poll. */
  leaseMs?: number;
  /** How often jobs are looked for (and leases renewed) while there is nothing to scan. */
  pollMs?: number;
  enqueueEvents?: number;
}

const DEFAULT_LEASE_MS = 30_000;
const DEFAULT_POLL_MS = 1_000;
/** A live stream this many blocks behind the node: no run starts. */
const LIVE_BEHIND_BLOCKS = 2;
/** Within a run, while a live stream has a block to process, matching pauses this long at most (then goes on). */
const LIVE_PAUSE_MS = 2_000;
/** Lookups of a run's blocks in flight (Redis, not the node). */
const LOOKUP_CONCURRENCY = 8;

/** At most `limit` calls of run() at once. */
class Limiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly limit: number) {}
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    try {
      return await fn();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}

export class BackfillScanner {
  /** This replica's name in the jobs' leases. */
  readonly owner = randomUUID();
  private jobs: BackfillJob[] = [];
  private readonly node: Limiter;
  private readonly leaseMs: number;
  private lastClaim = 0;
  private claimed = false;

  constructor(private readonly opts: BackfillScannerOptions) {
    this.node = new Limiter(opts.nodeConcurrency);
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
  }

  async run(signal: AbortSignal): Promise<void> {
    const pollMs = this.opts.pollMs ?? DEFAULT_POLL_MS;
    let failures = 0;
    while (!signal.aborted) {
      try {
        // Leases are renewed (and new jobs taken) at least every poll, whatever a run takes.
        if (this.jobs.length === 0 || Date.now() - this.lastClaim >= Math.min(pollMs, this.leaseMs / 3)) await this.claim();
        if (this.jobs.length === 0 || this.opts.liveLag() > LIVE_BEHIND_BLOCKS) {
          await sleep(this.jobs.length === 0 ? pollMs : 200, signal);
          continue;
        }
        await this.step(signal);
        failures = 0;
      } catch (err) {
        if (signal.aborted) break;
        failures++;
        const delay = stepRetryDelay(failures);
        this.opts.log.warn("backfill step failed; retrying", { err, retryInMs: delay });
        await sleep(delay, signal);
      }
    }
    await releaseJobs(this.opts.db, this.owner).catch(() => {});
  }

  private async claim(): Promise<void> {
    this.lastClaim = Date.now();
    const { db, chainId, perKey, log } = this.opts;
    const held = new Set(this.jobs.map((j) => j.id));
    this.jobs = await claimJobs(db, chainId, this.owner, this.leaseMs, perKey, !this.claimed);
    this.claimed = true;
    for (const j of this.jobs) if (!held.has(j.id)) log.info("backfill started", { backfill: j.id, from: j.nextBlock, to: j.toBlock });
  }

  /**
   * The next run: from the lowest block a job needs (at or after `after`), up to 100 blocks that some job needs,
   * contiguous.
   */
  private nextRun(after = 0): { start: number; end: number } | null {
    const pending = this.jobs.filter((j) => Math.max(j.nextBlock, after) <= j.toBlock);
    if (pending.length === 0) return null;
    const from = (j: BackfillJob) => Math.max(j.nextBlock, after);
    const start = Math.min(...pending.map(from));
    let end = start;
    while (end + 1 < start + MAX_BLOCKS_PER_RANGE && pending.some((j) => from(j) <= end + 1 && j.toBlock >= end + 1)) end++;
    return { start, end };
  }

  /** The run after `run`, fetched while `run` is matched (the node cap still holds: both go through `node`). */
  private prefetched: { start: number; end: number; blocks: Promise<DecodedBlock[]> } | null = null;

  private blocksOf(run: { start: number; end: number }): Promise<DecodedBlock[]> {
    const p = this.prefetched;
    this.prefetched = null;
    if (p && p.start === run.start && p.end === run.end) return p.blocks;
    return this.fetch(run.start, run.end);
  }

  private prefetchAfter(run: { start: number; end: number }): void {
    const next = this.nextRun(run.end + 1);
    if (!next) return;
    const blocks = this.fetch(next.start, next.end);
    // Observed when used; a failed prefetch is fetched again then.
    blocks.catch(() => {});
    this.prefetched = { ...next, blocks };
  }

  private async step(signal: AbortSignal): Promise<void> {
    const run = this.nextRun();
    if (!run) {
      // Every held job is past its range (a checkpoint that completed it was lost): complete them.
      for (const j of this.jobs) await advanceJob(this.opts.db, j, this.owner, j.toBlock + 1, { created: 0, skipped: 0 });
      this.jobs = [];
      return;
    }
    const blocks = await this.blocksOf(run);
    if (signal.aborted) return;
    this.prefetchAfter(run);
    const { chainId, lookup, log } = this.opts;
    const wanted = (j: BackfillJob, n: number) => n >= j.nextBlock && n <= j.toBlock;
    const participants = this.jobs.filter((j) => blocks.some((b) => wanted(j, b.number)));
    // One watch-index lookup per block for every job.
    const watched = await mapLimit(blocks, LOOKUP_CONCURRENCY, (b) =>
      b.transfers.length === 0 && b.activities.length === 0
        ? Promise.resolve(new Map<string, Watcher[]>())
        : lookup(chainId, touchedAddresses(b.transfers, b.activities)),
    );
    const counts = new Map(participants.map((j) => [j.id, { created: 0, skipped: 0 }]));
    const out = new EnqueueBatch(
      async (events) => {
        const res = await this.opts.enqueue(events);
        events.forEach((e, i) => {
          if (res.eventIds[i] === "") return;
          const c = counts.get(e.backfill!)!;
          if (res.made[i]) c.created++;
          else c.skipped++;
        });
      },
      undefined,
      this.opts.enqueueEvents,
    );
    await out.around(async () => {
      for (let i = 0; i < blocks.length; i++) {
        const b = blocks[i]!;
        for (const job of participants) {
          if (!wanted(job, b.number)) continue;
          out.add(jobEvents(chainId, job, b, watched[i]!));
        }
        // The live streams share this event loop: every 10 blocks, let their I/O in, and while one of them has a new
        // block to process, wait for it (bounded, so a stream that is stuck does not stop history).
        if (i % 10 === 9) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          const until = Date.now() + LIVE_PAUSE_MS;
          while (this.opts.liveLag() > 0 && Date.now() < until && !signal.aborted) await sleep(20, signal);
        }
      }
    });
    const stopped = new Set<string>();
    for (const job of participants) {
      const next = Math.min(run.end, job.toBlock) + 1;
      const c = counts.get(job.id)!;
      const kept = await advanceJob(this.opts.db, job, this.owner, next, c);
      job.nextBlock = next;
      if (!kept) {
        stopped.add(job.id);
        log.info("backfill stopped: canceled, or taken by another replica", { backfill: job.id });
      } else if (next > job.toBlock) log.info("backfill completed", { backfill: job.id, events: c.created });
    }
    blocksScanned.inc({ chain: chainId }, blocks.length);
    this.jobs = this.jobs.filter((j) => j.nextBlock <= j.toBlock && !stopped.has(j.id));
  }

  /** Blocks [start, end], decoded, with every request under the chain's history cap. */
  private async fetch(start: number, end: number): Promise<DecodedBlock[]> {
    const { client, chainId } = this.opts;
    const raw = await this.node.run(() => {
      historyRequests.inc({ chain: chainId, endpoint: "getblockbylimitnext" });
      return client.getBlockRange(start, end + 1);
    });
    if (raw.length === 0 || raw[0]!.block_header.raw_data.number !== start) {
      // Below the solidified head the node has every block, unless it was pruned: those jobs cannot go on.
      const head = (await this.node.run(() => client.getNowBlock())).block_header.raw_data.number;
      if (start <= head) {
        for (const j of this.jobs.filter((j) => j.nextBlock === start)) {
          await failJob(this.opts.db, j, this.owner, `the node does not serve block ${start}`);
        }
        this.jobs = this.jobs.filter((j) => j.nextBlock !== start);
      }
      return [];
    }
    return mapLimit(raw, this.opts.nodeConcurrency, (b) =>
      this.node.run(async () => {
        historyRequests.inc({ chain: chainId, endpoint: "gettransactioninfobyblocknum" });
        return decoded(b, await infosFor(client, b), this.opts.activity);
      }),
    );
  }
}

/**
 * A job's events of one block: the live streams' events for a solidified block (broadcasted and confirmed for a
 * successful transfer and for an activity, failed with its contractRet for the rest), for the job's subscription and
 * addresses only.
 */
export function jobEvents(chainId: ChainId, job: BackfillJob, block: DecodedBlock, watched: Map<string, Watcher[]>): NewEvent[] {
  const mine = new Map<string, Watcher[]>();
  for (const [address, watchers] of watched) {
    if (job.addresses && !job.addresses.has(address)) continue;
    const own = watchers.filter((w) => w.subscriptionId === job.subscriptionId);
    if (own.length > 0) mine.set(address, own);
  }
  if (mine.size === 0) return [];
  const ctx: BlockContext = { chainId, number: block.number, blockId: block.blockId, timestampMs: block.timestampMs };
  const finality = { solidifiedBlockNumber: job.solidifiedHead };
  const ok = block.transfers.filter(succeeded);
  const failed = block.transfers.filter((t) => !succeeded(t));
  const events = [
    ...buildEvents(ctx, ok, mine, BROADCASTED),
    ...buildEvents(ctx, ok, mine, CONFIRMED, finality),
    ...buildEvents(ctx, failed, mine, FAILED, finality),
    ...buildActivityEvents(ctx, block.activities, mine, { phase: "broadcasted" }),
    ...buildActivityEvents(ctx, block.activities, mine, { phase: "confirmed", solidifiedBlockNumber: job.solidifiedHead }),
  ];
  for (const e of events) e.backfill = job.id;
  return events;
}
