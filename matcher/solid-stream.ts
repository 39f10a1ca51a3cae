// One chain's solidified stream: `wallet.transfer.confirmed` for the successful transfers of every block at or
// below the solidified head, `wallet.transfer.failed` (reason = java-tron's contractRet) for the failed ones, and
// `failed` / `dropped` for transfers of fork-replaced blocks that the solidified chain passed the expiration of
// without including them. It follows the node's solidified head (/walletsolidity/getnowblock); a node without the
// solidity API (404 there; any other error is retried and finality waits), or MATCHER_CONFIRMATIONS set, makes finality the head minus that many
// blocks (default 19). It reads the blocks the head stream already fetched from the shared cache and asks the node
// only on a miss. Its checkpoint (with the pending drops it settled) moves only after the deliverer accepted the
// events of every block up to it, like the head stream's, so a crash re-reads instead of skipping.
import type { ActivityDecodeOptions } from "./activity/types.ts";
import type { NewEvent } from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import { CONFIRMED, FAILED, type ChainId } from "../common/contract/index.ts";
import type { Logger } from "../common/logger.ts";
import type { StreamLink } from "./block-cache.ts";
import { EnqueueBatch } from "./enqueue-batch.ts";
import { fetchDecodedRange, mapLimit, type DecodedBlock } from "./fetch.ts";
import type { ChainLease } from "./lease.ts";
import { matchFinal, type BlockContext, type WatchLookup } from "./match.ts";
import * as m from "./metrics.ts";
import {
  LeaseLostError,
  advanceSolidifiedCheckpoint,
  loadCheckpoint,
  loadPendingDrops,
  loadSolidifiedCheckpoint,
  recentSolidifiedBlocks,
  rollbackSolidifiedCheckpoint,
  solidifiedIncluded,
  BLOCK_HISTORY,
  type BlockRef,
  type MatcherDb,
  type PendingDrop,
} from "./store.ts";
import { stepRetryDelay } from "./stream.ts";
import { sleep } from "../common/timing.ts";
import { MAX_BLOCKS_PER_RANGE, lacksSolidityApi, type TronClient } from "../common/tron-node/client.ts";

/** What blocks() answers when the node's chain no longer holds the checkpoint's block. */
const DEAD_CHECKPOINT = Symbol("dead solidified checkpoint");

/** The contract's default distance to finality when the node has no solidity API. */
export const DEFAULT_CONFIRMATIONS = 19;
/** After the solidity API failed, how long finality is counted before it is asked again. */
const SOLIDITY_RECHECK_MS = 60_000;
/** At most one solidified-head request per this long while waiting (the contract's politeness bound). */
const MIN_POLL_INTERVAL_MS = 500;
/** How long the head stream may fetch nothing while we wait for a block it is about to fetch (then we ask the node). */
const CACHE_WAIT_MS = 5_000;

export interface SolidStreamOptions {
  chainId: ChainId;
  client: TronClient;
  /** How the chain's account activity is decoded; null: transfers only. */
  activity: ActivityDecodeOptions | null;
  db: MatcherDb;
  lookup: WatchLookup;
  enqueue: (events: NewEvent[]) => Promise<void>;
  /** Events per Enqueue call (default MAX_EVENTS_PER_CALL, enqueue-batch.ts). */
  enqueueEvents?: number;
  log: Logger;
  link: StreamLink;
  /** MATCHER_CONFIRMATIONS: finality = head − this, whatever the node's solidity API says. */
  confirmations?: number;
  /** A fixed polling interval (MATCHER_POLL_MS); unset: after each new head, at most every 500 ms. */
  pollMs?: number;
  batchSize?: number;
  concurrency?: number;
  onCheckpoint?: (ref: SolidProgress) => void;
  /** Told the newest block of a run before its lookups start (the re-matcher covers runs in flight, rematch.ts). */
  onMatching?: (to: number) => void;
}

export interface SolidProgress extends BlockRef {
  timestampMs: number;
  /** The solidified head when the checkpoint moved. */
  solidifiedHead: number;
}

interface Finality {
  number: number;
  /** The block id at `number` when the node told it (solidity API), else null. */
  blockId: string | null;
}

export class SolidifiedStream {
  private last: SolidProgress | null = null;
  private solidityApi = true;
  private solidityRecheckAt = 0;
  private lastPollAt = 0;
  private finality: Finality | null = null;
  private readonly chain: string;
  private readonly batchSize: number;
  private readonly concurrency: number;

  constructor(private readonly opts: SolidStreamOptions) {
    this.chain = opts.chainId;
    this.batchSize = Math.min(MAX_BLOCKS_PER_RANGE, opts.batchSize ?? 50);
    this.concurrency = opts.concurrency ?? 16;
  }

  get progress(): SolidProgress | null {
    return this.last;
  }

  async run(lease: ChainLease, signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      try {
        if (!this.last) await this.start(signal);
        else await this.step(lease, signal);
        failures = 0;
      } catch (err) {
        if (err instanceof LeaseLostError) throw err;
        if (signal.aborted) break;
        failures++;
        m.streamErrors.inc({ chain: this.chain });
        const delay = stepRetryDelay(failures);
        this.opts.log.warn("solidified stream step failed; retrying", { err, retryInMs: delay });
        await sleep(delay, signal);
      }
    }
  }

  /**
   * Resumes after the checkpoint. The first time, it begins where the head stream began (its checkpoint then is
   * its first block), or just above the solidified head when that is lower, so no block the head stream
   * broadcasted from is left unconfirmed.
   */
  private async start(signal: AbortSignal): Promise<void> {
    const { db, log } = this.opts;
    const cp = await loadSolidifiedCheckpoint(db, this.chain);
    if (cp) {
      this.last = { ...cp, timestampMs: 0, solidifiedHead: 0 };
      log.info("solidified stream resuming from its checkpoint", { block: cp.number });
      return;
    }
    const head = await loadCheckpoint(db, this.chain);
    if (!head) {
      // The head stream has not made its first checkpoint yet.
      await this.opts.link.changed(250, signal);
      return;
    }
    const fin = await this.currentFinality();
    const from = Math.min(head.number, fin.number + 1);
    // No parent to check the first block against: an empty id skips that one check.
    this.last = { number: from - 1, blockId: "", timestampMs: 0, solidifiedHead: fin.number };
    log.info("no solidified checkpoint: starting", { block: from, solidifiedHead: fin.number });
  }

  private async step(lease: ChainLease, signal: AbortSignal): Promise<void> {
    const last = this.last!;
    let fin = this.finality;
    if (!fin || fin.number <= last.number) {
      await this.waitForPoll(signal);
      if (signal.aborted) return;
      fin = await this.currentFinality();
      if (fin.number <= last.number) return;
    }
    const end = Math.min(fin.number, last.number + this.batchSize);
    const batch = await this.blocks(last, end, fin, signal);
    if (batch === DEAD_CHECKPOINT) {
      await this.rollback(lease);
      return;
    }
    if (batch.length === 0) {
      // The node does not have them (yet): ask for the solidified head again after the polling wait.
      this.finality = null;
      return;
    }
    if (signal.aborted) return;
    await this.process(lease, batch, fin.number, signal);
  }

  /**
   * Waits for a new head (the solidified head moves with it; without one, 3 s at most), then keeps the polling
   * interval (MATCHER_POLL_MS, else 500 ms) since the last request: one solidified-head request per new block.
   */
  private async waitForPoll(signal: AbortSignal): Promise<void> {
    const { link, pollMs } = this.opts;
    const headBefore = link.head;
    const deadline = Date.now() + 3_000;
    while (link.head === headBefore && Date.now() < deadline && !signal.aborted) await link.changed(deadline - Date.now(), signal);
    await sleep(this.lastPollAt + (pollMs ?? MIN_POLL_INTERVAL_MS) - Date.now(), signal);
  }

  /**
   * The solidified head now: the node's (solidity API), or the head minus the confirmations when the node has no
   * solidity API (404 there). Any other failure of that API (a 429, a 5xx, a timeout) throws: the step is retried
   * with backoff and finality waits, as counting confirmations could call final what the node has not solidified.
   */
  private async currentFinality(): Promise<Finality> {
    const { client, link, confirmations, log } = this.opts;
    this.lastPollAt = Date.now();
    let fin: Finality | null = null;
    if (confirmations === undefined && (this.solidityApi || Date.now() >= this.solidityRecheckAt)) {
      try {
        const block = await client.getSolidifiedNowBlock();
        fin = { number: block.block_header.raw_data.number, blockId: block.blockID };
        if (!this.solidityApi) log.info("the node's solidity API answers again; following its solidified head");
        this.solidityApi = true;
      } catch (err) {
        if (lacksSolidityApi(err)) {
          if (this.solidityApi) {
            log.warn("the node has no solidity API; finality is the head minus confirmations", { err, confirmations: DEFAULT_CONFIRMATIONS });
          }
          this.solidityApi = false;
          this.solidityRecheckAt = Date.now() + SOLIDITY_RECHECK_MS;
        } else if (this.solidityApi) {
          m.solidityApiUp.set({ chain: this.chain }, 0);
          throw err;
        } else {
          // Still counting since a 404: a failed recheck keeps it so until the next one.
          this.solidityRecheckAt = Date.now() + SOLIDITY_RECHECK_MS;
        }
      }
    }
    m.solidityApiUp.set({ chain: this.chain }, fin ? 1 : 0);
    if (!fin) {
      let head = link.head;
      if (head === 0) head = (await client.getNowBlock()).block_header.raw_data.number;
      fin = { number: head - (confirmations ?? DEFAULT_CONFIRMATIONS), blockId: null };
    }
    this.finality = fin;
    m.solidifiedHeadBlock.set({ chain: this.chain }, fin.number);
    if (this.last) {
      m.solidifiedLagBlocks.set({ chain: this.chain }, Math.max(0, fin.number - this.last.number));
      link.noteSolid(this.last.number + 1, fin.number);
    }
    return fin;
  }

  /**
   * Blocks (last, end], from the cache where the head stream fetched them, else from the node. When the head
   * stream is about to fetch the next one (it is behind the node's head and has not reached it yet), it is waited
   * for rather than fetched twice. The run must chain by parentHash from `last`, and when it ends at the node's
   * solidified head, end on its id; a cached block of a branch a fork replaced fails that and is fetched again.
   */
  private async blocks(last: BlockRef, end: number, fin: Finality, signal: AbortSignal): Promise<DecodedBlock[] | typeof DEAD_CHECKPOINT> {
    const { link, client } = this.opts;
    const out: DecodedBlock[] = [];
    let fromCache = 0;
    for (let n = last.number + 1; n <= end; n++) {
      // The head stream will fetch it (it has not passed it, and the node has it or its head is not known yet):
      // wait while it keeps fetching, rather than fetch the block twice.
      let deadline = Date.now() + CACHE_WAIT_MS;
      let seen = link.fetchedTo;
      while (!link.has(n) && link.fetchedTo < n && (link.head === 0 || link.head >= n) && Date.now() < deadline && !signal.aborted) {
        await link.changed(deadline - Date.now(), signal);
        if (link.fetchedTo !== seen) {
          seen = link.fetchedTo;
          deadline = Date.now() + CACHE_WAIT_MS;
        }
      }
      const b = link.get(n);
      if (!b) {
        out.push(...(await fetchDecodedRange(client, n, end + 1, this.concurrency, this.opts.activity)));
        break;
      }
      out.push(b);
      fromCache++;
    }
    if (await this.verified(last, out, fin)) return out;
    let fresh = out;
    if (fromCache > 0) {
      // A cached block of an abandoned branch: read the run from the node (it is at or below the solidified head).
      this.opts.log.warn("cached blocks are not the canonical ones; reading them from the node", { from: last.number + 1, to: end });
      fresh = await fetchDecodedRange(client, last.number + 1, end + 1, this.concurrency, this.opts.activity);
      if (await this.verified(last, fresh, fin)) return fresh;
    }
    // The node's blocks do not chain to our checkpoint: a fork replaced the checkpoint's block (finality counted too
    // short), or the node's answers are inconsistent (two nodes behind one URL: retried).
    if (last.blockId !== "" && fresh[0]?.number === last.number + 1 && fresh[0].parentHash !== last.blockId) {
      const id = await this.canonicalId(last.number, fin);
      if (id !== null && id !== last.blockId) return DEAD_CHECKPOINT;
    }
    throw new Error(`blocks ${last.number + 1}..${end} are not the node's solidified chain after the checkpoint`);
  }

  /**
   * Whether a run may be confirmed: it chains by parentHash from the checkpoint, and its newest block is the node's
   * at that height (the solidified head told with finality, else asked for) — a chain of parent hashes from a
   * checked block makes every block below it canonical too. Chaining from the checkpoint alone proves nothing: a
   * replaced branch chains from the common ancestor as well.
   */
  private async verified(last: BlockRef, run: readonly DecodedBlock[], fin: Finality): Promise<boolean> {
    if (!this.links(last, run, fin)) return false;
    const top = run[run.length - 1];
    if (!top || (fin.blockId !== null && top.number === fin.number)) return true;
    const id = await this.canonicalId(top.number, fin);
    if (id === null) throw new Error(`block ${top.number} is not in the node's solidified view yet`);
    return id === top.blockId;
  }

  /**
   * The id of block `n` (at or below the solidified head) in the node's solidified view, or in its full view where
   * finality is counted (no solidity API, or MATCHER_CONFIRMATIONS); null when the node does not have it.
   */
  private async canonicalId(n: number, fin: Finality): Promise<string | null> {
    const { client } = this.opts;
    const block = fin.blockId !== null ? await client.getSolidifiedBlockHeader(n) : await client.getBlockHeader(n);
    return block?.blockID ?? null;
  }

  /** Walks back through the confirmed block ids to the newest one the node still has, and resumes after it. */
  private async rollback(lease: ChainLease): Promise<void> {
    const last = this.last!;
    const { client, db, log } = this.opts;
    const history = await recentSolidifiedBlocks(db, this.chain, last.number - BLOCK_HISTORY);
    let ancestor: BlockRef | null = null;
    const fin = this.finality ?? { number: last.number, blockId: null };
    for (const ref of history) {
      if ((await this.canonicalId(ref.number, fin)) === ref.blockId) {
        ancestor = ref;
        break;
      }
    }
    if (!ancestor) {
      // Deeper than the remembered ids: go on from the node's block below the oldest of them (re-reading is harmless:
      // the deliverer keeps one event per transfer and kind).
      const oldest = history[history.length - 1] ?? last;
      const node = await client.getBlockHeader(oldest.number - 1);
      if (!node) throw new Error(`solidified fork deeper than ${BLOCK_HISTORY} blocks and the node lacks block ${oldest.number - 1}`);
      ancestor = { number: oldest.number - 1, blockId: node.blockID };
      log.error("solidified fork deeper than the remembered ids; following the node", { from: ancestor.number });
    }
    await rollbackSolidifiedCheckpoint(lease, ancestor);
    m.solidifiedForks.inc({ chain: this.chain });
    log.error("the solidified checkpoint was on a block a fork replaced: rolled back to the common ancestor", {
      ancestor: ancestor.number,
      depth: last.number - ancestor.number,
    });
    this.last = { ...ancestor, timestampMs: 0, solidifiedHead: last.solidifiedHead };
    this.finality = null;
    this.opts.link.noteSolid(ancestor.number + 1, last.solidifiedHead);
  }

  private links(last: BlockRef, blocks: readonly DecodedBlock[], fin: Finality): boolean {
    let prev = last;
    for (const b of blocks) {
      if (b.number !== prev.number + 1 || (prev.blockId !== "" && b.parentHash !== prev.blockId)) return false;
      prev = b;
    }
    return !(fin.blockId !== null && prev.number === fin.number && prev.blockId !== fin.blockId);
  }

  private async process(lease: ChainLease, batch: DecodedBlock[], solidifiedHead: number, signal: AbortSignal): Promise<void> {
    const { chainId, lookup, enqueue } = this.opts;
    this.opts.onMatching?.(batch[batch.length - 1]!.number);
    const finality = { solidifiedBlockNumber: solidifiedHead };
    let confirmed = 0;
    let failed = 0;
    const count = (events: NewEvent[]) => {
      for (const e of events) e.kind === CONFIRMED ? confirmed++ : failed++;
    };
    // The run's events go to the deliverer in few calls (enqueue-batch.ts), sent while later blocks are still matched.
    const out = new EnqueueBatch(enqueue, undefined, this.opts.enqueueEvents);
    await out.around(() =>
      mapLimit(batch, this.concurrency, async (block) => {
        const ctx: BlockContext = { chainId, number: block.number, blockId: block.blockId, timestampMs: block.timestampMs };
        const made = await matchFinal(ctx, block, lookup, finality);
        out.add(made);
        count(made);
      }).then(() => {}),
    );
    const settled = await this.settleDrops(batch, solidifiedHead);
    for (const d of settled.dropped) count(d);
    if (signal.aborted) return;
    const tip = batch[batch.length - 1]!;
    const record = batch.map((b) => ({ number: b.number, blockId: b.blockId, txIds: b.transfers.map((t) => t.txId) }));
    await advanceSolidifiedCheckpoint(lease, { number: tip.number, blockId: tip.blockId }, settled.settled, record);
    this.last = { number: tip.number, blockId: tip.blockId, timestampMs: tip.timestampMs, solidifiedHead };
    this.opts.link.noteSolid(tip.number + 1, solidifiedHead);
    m.solidifiedBlocksProcessed.inc({ chain: this.chain }, batch.length);
    if (confirmed) m.finalEvents.inc({ chain: this.chain, kind: CONFIRMED }, confirmed);
    if (failed) m.finalEvents.inc({ chain: this.chain, kind: FAILED }, failed);
    m.solidifiedCheckpointBlock.set({ chain: this.chain }, tip.number);
    m.solidifiedLagBlocks.set({ chain: this.chain }, Math.max(0, solidifiedHead - tip.number));
    m.solidifiedLagSeconds.set({ chain: this.chain }, Math.max(0, (Date.now() - tip.timestampMs) / 1000));
    this.opts.onCheckpoint?.(this.last);
  }

  /**
   * Pending drops against this run of solidified blocks and the ones before it: one whose transaction a block
   * includes is settled by that block (its confirmed or failed came from it) — an earlier run's inclusion too, by
   * the durable record, for a fork the head stream saw only after this stream had passed the new branch; one whose
   * expiration the newest block's timestamp passed can never be included and becomes failed / dropped, with the
   * replaced block's number, id and timestamp.
   */
  private async settleDrops(batch: DecodedBlock[], solidifiedHead: number): Promise<{ settled: PendingDrop[]; dropped: NewEvent[][] }> {
    const { db, chainId, lookup, enqueue } = this.opts;
    const pending = await loadPendingDrops(db, this.chain);
    m.pendingDrops.set({ chain: this.chain }, pending.length);
    if (pending.length === 0) return { settled: [], dropped: [] };
    const included = await solidifiedIncluded(db, this.chain, [...new Set(pending.map((d) => d.transfer.txId))]);
    for (const b of batch) for (const id of b.txIds) included.add(id);
    const newest = batch[batch.length - 1]!.timestampMs;
    const settled: PendingDrop[] = [];
    const expiredByBlock = new Map<string, PendingDrop[]>();
    for (const d of pending) {
      if (included.has(d.transfer.txId)) settled.push(d);
      else if (d.expirationMs < newest) {
        settled.push(d);
        const list = expiredByBlock.get(d.block.blockId);
        if (list) list.push(d);
        else expiredByBlock.set(d.block.blockId, [d]);
      }
    }
    const dropped: NewEvent[][] = [];
    for (const drops of expiredByBlock.values()) {
      const b = drops[0]!.block;
      const ctx: BlockContext = { chainId, number: b.number, blockId: b.blockId, timestampMs: b.timestampMs };
      const made = await matchFinal(
        ctx,
        { transfers: drops.map((d) => d.transfer), activities: [] },
        lookup,
        { solidifiedBlockNumber: solidifiedHead, reason: "dropped" },
      );
      if (made.length > 0) {
        await enqueue(made);
        dropped.push(made);
      }
    }
    if (settled.length > 0) {
      this.opts.log.info("pending drops settled", {
        included: settled.length - [...expiredByBlock.values()].reduce((a, l) => a + l.length, 0),
        dropped: [...expiredByBlock.values()].reduce((a, l) => a + l.length, 0),
      });
    }
    return { settled, dropped };
  }
}
