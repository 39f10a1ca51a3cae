// One chain's head stream (wallet.transfer.broadcasted). Resumes after its checkpoint (or starts at the node's head the first time), checks
// every block's parentHash against the previous blockID, rolls back to the common ancestor on a fork, catches up
// in batches of blocks (fetched ahead while the previous batch is matched), and at the tip polls around each
// block's expected time (TRON makes a block every 3 s). The checkpoint moves only after the deliverer accepted the
// events of every block up to it, so a crash at any point re-reads blocks instead of skipping them; re-reading
// is harmless because the deliverer keeps one event per (subscription, kind, transfer). Every block it fetches goes
// into the chain's block cache for the solidified stream (solid-stream.ts); a block processed above the solidified
// head keeps its transfers with its id, so a fork that replaces it turns them into pending drops (store.ts).
import type { ActivityDecodeOptions } from "./activity/types.ts";
import type { NewEvent } from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import type { ChainId } from "../common/contract/index.ts";
import type { Logger } from "../common/logger.ts";
import { backoffDelay, sleep } from "../common/timing.ts";
import { EnqueueBatch } from "./enqueue-batch.ts";
import { decoded, fetchDecodedRange, infosFor, mapLimit, type DecodedBlock } from "./fetch.ts";
import type { ChainLease } from "./lease.ts";
import type { StreamLink } from "./block-cache.ts";
import { matchBroadcasted, type WatchLookup } from "./match.ts";
import * as m from "./metrics.ts";
import {
  BLOCK_HISTORY,
  LeaseLostError,
  advanceCheckpoint,
  loadCheckpoint,
  recentBlocks,
  rollbackCheckpoint,
  type BlockRef,
  type MatcherDb,
  type ProcessedBlock,
} from "./store.ts";
import { MAX_BLOCKS_PER_RANGE, TronNodeError, type TronClient } from "../common/tron-node/client.ts";

export interface StreamOptions {
  chainId: ChainId;
  client: TronClient;
  /** How the chain's account activity is decoded; null: transfers only. */
  activity: ActivityDecodeOptions | null;
  db: MatcherDb;
  lookup: WatchLookup;
  /** Hands events to the deliverer (a run of blocks' worth at most); resolves once it accepted them. */
  enqueue: (events: NewEvent[]) => Promise<void>;
  log: Logger;
  /** A fixed head-polling interval (MATCHER_POLL_MS); unset: poll around each block's expected time. */
  pollMs?: number;
  /** TRON's block interval. */
  blockIntervalMs?: number;
  /** Blocks per catch-up batch (java-tron allows 100 per range request). */
  batchSize?: number;
  /** Parallel requests / lookups within a batch. */
  concurrency?: number;
  /** Events per Enqueue call (default MAX_EVENTS_PER_CALL, enqueue-batch.ts). */
  enqueueEvents?: number;
  /** Called after each checkpoint. */
  onCheckpoint?: (ref: Progress) => void;
  /** Told the newest block of a run before its lookups start (the re-matcher covers runs in flight, rematch.ts). */
  onMatching?: (to: number) => void;
  /** Shared with the chain's solidified stream (absent when it does not run): the block cache and positions. */
  link?: StreamLink;
  /** Takes a step's failure when the node did not answer (it reports them, rate-limited); unset, they are logged. */
  onNodeError?: (err: TronNodeError) => void;
}

export interface Progress extends BlockRef {
  timestampMs: number;
}

/** After the expected block time, how long a block usually takes to reach a node. */
const FIRST_POLL_DELAY_MS = 150;
/** The contract's politeness bound: at most one head poll per 500 ms while waiting. */
const MIN_POLL_INTERVAL_MS = 500;
function blockRef(b: DecodedBlock): Progress {
  return { number: b.number, blockId: b.blockId, timestampMs: b.timestampMs };
}

/** How long a stream waits after its `failures`-th failed step in a row: 250 ms doubling, at most 10 s. */
export function stepRetryDelay(failures: number): number {
  return backoffDelay(failures, 250, 10_000);
}

export class ChainStream {
  private last: Progress | null = null;
  private headNumber = 0;
  private lastPollAt = 0;
  private prefetch: { start: number; promise: Promise<DecodedBlock[]> } | null = null;
  private signal: AbortSignal = new AbortController().signal;
  private readonly chain: string;
  private readonly batchSize: number;
  private readonly concurrency: number;
  private readonly blockIntervalMs: number;
  private readonly stageCounters = new Map<string, { inc(v: number): void }>();

  constructor(private readonly opts: StreamOptions) {
    this.chain = opts.chainId;
    this.batchSize = Math.min(MAX_BLOCKS_PER_RANGE, opts.batchSize ?? 50);
    this.concurrency = opts.concurrency ?? 16;
    this.blockIntervalMs = opts.blockIntervalMs ?? 3_000;
  }

  /** Adds the time since `since` to a stage's counter (children bound once: unbound calls hash a label object). */
  private stage(name: string, since: number): void {
    let c = this.stageCounters.get(name);
    if (!c) {
      c = m.stageSeconds.labels({ chain: this.chain, stage: name });
      this.stageCounters.set(name, c);
    }
    c.inc((performance.now() - since) / 1000);
  }

  get progress(): Progress | null {
    return this.last;
  }

  /** Streams until `signal` aborts; throws LeaseLostError when the lease is gone (the caller re-acquires). */
  async run(lease: ChainLease, signal: AbortSignal): Promise<void> {
    const { client, db, log } = this.opts;
    this.signal = signal;
    let failures = 0;
    while (!signal.aborted) {
      try {
        if (!this.last) {
          const cp = await loadCheckpoint(db, this.chain);
          if (cp) {
            this.last = { ...cp, timestampMs: 0 };
            this.opts.link?.resumeAfter(cp.number);
            log.info("resuming from checkpoint", { block: cp.number });
          } else {
            // First start: begin at the node's head (the head block itself included).
            const head = await client.getNowBlock();
            this.headNumber = head.block_header.raw_data.number;
            log.info("no checkpoint: starting at the node's head", { block: this.headNumber });
            await this.process(lease, [await this.tipBlock(head)], signal);
          }
        } else {
          await this.step(lease, signal);
        }
        failures = 0;
      } catch (err) {
        if (err instanceof LeaseLostError) throw err;
        if (signal.aborted) break;
        failures++;
        m.streamErrors.inc({ chain: this.chain });
        this.prefetch = null;
        const delay = stepRetryDelay(failures);
        if (err instanceof TronNodeError && this.opts.onNodeError) this.opts.onNodeError(err);
        else log.warn("stream step failed; retrying", { err, retryInMs: delay });
        await sleep(delay, signal);
      }
    }
  }

  private async step(lease: ChainLease, signal: AbortSignal): Promise<void> {
    const last = this.last!;
    const next = last.number + 1;
    if (this.headNumber > next) {
      const batch = await this.fetchBatch(next);
      if (batch.length === 0) {
        // The node's chain ends before what it reported as head (a fork shortened it): poll the head again.
        this.headNumber = next - 1;
        return;
      }
      this.startPrefetch(next + batch.length);
      await this.process(lease, batch, signal);
      return;
    }
    await this.waitForPoll(signal);
    if (signal.aborted) return;
    this.lastPollAt = Date.now();
    const head = await this.opts.client.getNowBlock();
    this.noteHead(head.block_header.raw_data.number);
    if (this.headNumber < next) {
      // A shorter head than our checkpoint: a fork replaced our newest blocks with a shorter branch, or a node
      // behind its peers. Check our newest block is still on the node's chain.
      if (this.headNumber < last.number) await this.checkStillCanonical(lease, this.headNumber);
      return;
    }
    if (this.headNumber === next) {
      await this.process(lease, [await this.tipBlock(head)], signal);
    }
    // Further behind: the next step catches up in batches.
  }

  private noteHead(n: number): void {
    this.headNumber = n;
    this.opts.link?.noteHead(n);
    m.headBlock.set({ chain: this.chain }, n);
    if (this.last) m.lagBlocks.set({ chain: this.chain }, Math.max(0, n - this.last.number));
  }

  private async waitForPoll(signal: AbortSignal): Promise<void> {
    const now = Date.now();
    if (this.opts.pollMs !== undefined) {
      await sleep(this.lastPollAt + this.opts.pollMs - now, signal);
      return;
    }
    const expected = (this.last?.timestampMs ?? 0) + this.blockIntervalMs + FIRST_POLL_DELAY_MS;
    const earliest = this.lastPollAt + MIN_POLL_INTERVAL_MS;
    await sleep(Math.max(expected, earliest) - now, signal);
  }

  private startPrefetch(start: number): void {
    if (start >= this.headNumber) {
      this.prefetch = null;
      return;
    }
    const promise = this.fetchRange(start);
    promise.catch(() => {});
    this.prefetch = { start, promise };
  }

  private async fetchBatch(start: number): Promise<DecodedBlock[]> {
    const pre = this.prefetch;
    this.prefetch = null;
    if (pre && pre.start === start) {
      try {
        return await pre.promise;
      } catch {
        // fetched again below
      }
    }
    return this.fetchRange(start);
  }

  private async fetchRange(start: number): Promise<DecodedBlock[]> {
    const started = performance.now();
    try {
      return await this.fetchRangeUntimed(start);
    } finally {
      this.stage("fetch", started);
    }
  }

  private async fetchRangeUntimed(start: number): Promise<DecodedBlock[]> {
    const link = this.opts.link;
    // Catching up over blocks the solidified stream needs too: stay within the cache's reach of it, so each block
    // is fetched once.
    while (link?.shouldHold(start, this.batchSize) && !this.signal.aborted) await link.changed(250, this.signal);
    const end = Math.min(start + this.batchSize, this.headNumber + 1);
    const blocks = await fetchDecodedRange(this.opts.client, start, end, this.concurrency, this.opts.activity);
    link?.put(blocks);
    return blocks;
  }

  /** A block read at the tip, decoded here (one every few seconds). */
  private async tipBlock(block: Parameters<typeof decoded>[0]): Promise<DecodedBlock> {
    const t = performance.now();
    const infos = await infosFor(this.opts.client, block);
    const d = decoded(block, infos, this.opts.activity);
    this.stage("decode", t);
    this.opts.link?.put([d]);
    return d;
  }

  private async process(lease: ChainLease, batch: DecodedBlock[], signal: AbortSignal): Promise<void> {
    // Keep the run of blocks that extends our chain; a parent mismatch at the start is a fork.
    const accepted: DecodedBlock[] = [];
    let prev: BlockRef | null = this.last;
    for (const b of batch) {
      if (prev && (b.parentHash !== prev.blockId || b.number !== prev.number + 1)) break;
      accepted.push(b);
      prev = blockRef(b);
    }
    if (accepted.length === 0) {
      await this.rollback(lease, batch[0]!);
      return;
    }
    this.opts.onMatching?.(accepted[accepted.length - 1]!.number);
    let transfers = 0;
    let activities = 0;
    let events = 0;
    const stage = (name: string, since: number) => this.stage(name, since);
    // The run's events go to the deliverer in few calls (enqueue-batch.ts), sent while later blocks are still matched.
    const out = new EnqueueBatch(this.opts.enqueue, (since) => stage("enqueue", since), this.opts.enqueueEvents);
    await out.around(() =>
      mapLimit(accepted, this.concurrency, async (block) => {
        transfers += block.transfers.length;
        activities += block.activities.length;
        const t = performance.now();
        const made = await matchBroadcasted(
          { chainId: this.opts.chainId, number: block.number, blockId: block.blockId, timestampMs: block.timestampMs },
          block,
          this.opts.lookup,
        );
        stage("lookup", t);
        out.add(made);
        events += made.length;
      }).then(() => {}),
    );
    if (signal.aborted) return;
    const refs = accepted.map(blockRef);
    const link = this.opts.link;
    // Above the solidified head a fork may still replace a block: keep its transfers until it is final.
    const processed: ProcessedBlock[] = link
      ? accepted.map((b) => (b.number > link.solidHead ? { ...blockRef(b), transfers: b.transfers } : blockRef(b)))
      : refs;
    const t = performance.now();
    await advanceCheckpoint(lease, processed);
    stage("checkpoint", t);
    const last = refs[refs.length - 1]!;
    this.last = last;
    if (this.headNumber < last.number) this.noteHead(last.number);
    m.blocksProcessed.inc({ chain: this.chain }, refs.length);
    m.transfersDecoded.inc({ chain: this.chain }, transfers);
    m.activitiesDecoded.inc({ chain: this.chain }, activities);
    m.eventsEnqueued.inc({ chain: this.chain }, events);
    m.checkpointBlock.set({ chain: this.chain }, last.number);
    m.lagBlocks.set({ chain: this.chain }, Math.max(0, this.headNumber - last.number));
    m.lagSeconds.set({ chain: this.chain }, Math.max(0, (Date.now() - last.timestampMs) / 1000));
    this.opts.onCheckpoint?.(last);
  }

  /** Our newest block is past the node's head: if the node's block at that height differs, we are on a dead branch. */
  private async checkStillCanonical(lease: ChainLease, headNumber: number): Promise<void> {
    const node = await this.opts.client.getBlockHeader(headNumber + 1);
    if (node) return; // the head moved on meanwhile; the next poll sees it
    const history = await recentBlocks(this.opts.db, this.chain, headNumber);
    const ours = history.find((h) => h.number === headNumber);
    const theirs = await this.opts.client.getBlockHeader(headNumber);
    if (ours && theirs && theirs.blockID !== ours.blockId) await this.rollback(lease, decoded(theirs, null, null));
  }

  /** Walks back through the remembered block ids to the newest one the node still has, and resumes after it. */
  private async rollback(lease: ChainLease, conflicting: DecodedBlock): Promise<void> {
    const last = this.last!;
    const { client, db, log } = this.opts;
    const history = await recentBlocks(db, this.chain, last.number - BLOCK_HISTORY);
    let ancestor: BlockRef | null = null;
    for (const ref of history) {
      const node = await client.getBlockHeader(ref.number);
      if (node && node.blockID === ref.blockId) {
        ancestor = ref;
        break;
      }
    }
    if (!ancestor) {
      // Deeper than the remembered history: follow the node from the oldest remembered height.
      const oldest = history[history.length - 1] ?? last;
      const node = await client.getBlockHeader(oldest.number - 1);
      if (!node) throw new Error(`fork deeper than ${BLOCK_HISTORY} blocks and the node lacks block ${oldest.number - 1}`);
      ancestor = { number: oldest.number - 1, blockId: node.blockID };
      log.error("fork deeper than the remembered history; following the node", { from: ancestor.number });
    }
    await rollbackCheckpoint(lease, ancestor);
    this.opts.link?.dropAbove(ancestor.number);
    m.forks.inc({ chain: this.chain });
    log.warn("fork: rolled back to the common ancestor", {
      ancestor: ancestor.number,
      depth: last.number - ancestor.number,
      conflictingBlock: conflicting.number,
      conflictingParent: conflicting.parentHash,
    });
    this.last = { ...ancestor, timestampMs: 0 };
    this.prefetch = null;
    // Re-read from the ancestor at once rather than waiting for a poll slot.
    this.headNumber = Math.max(this.headNumber, ancestor.number + 2);
  }
}
