// Re-matching after a repair of the watch index. When the registry finds the index lost keys outside its writers
// (registry/watch-index/upkeep.ts verify) or lost its state and rebuilds it, blocks the streams processed meanwhile were
// matched against a partial index and missed the addresses it lacked. The registry then files a request
// (watch_rematch_requests) holding both streams' checkpoints at the index's last clean check; the chain's lease
// holder re-reads the blocks after them up to its current checkpoints from the node and runs them through the same
// match and Enqueue as the live streams (broadcasted for the head stream's blocks, confirmed / failed for the
// solidified stream's). Every watched address is matched again, not only the lost ones: the deliverer keeps one
// event per (subscription, kind, transfer), so events made the first time are not made twice.
//
// Only blocks the streams remember having processed (their recorded ids, the last BLOCK_HISTORY per stream) are
// re-matched, and only where the node's block still has that id: a block a fork replaced is the fork handling's, and
// a re-match never makes an event for a block the streams did not accept. Older blocks are logged as not re-matched.
import type { ActivityDecodeOptions } from "./activity/types.ts";
import { and, asc, eq, inArray, isNull, lt } from "drizzle-orm";
import type { NewEvent } from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import type { ChainId } from "../common/contract/index.ts";
import type { Logger } from "../common/logger.ts";
import { EnqueueBatch } from "./enqueue-batch.ts";
import { fetchDecodedRange, mapLimit, type DecodedBlock } from "./fetch.ts";
import { matchBroadcasted, matchFinal, type BlockContext, type WatchLookup } from "./match.ts";
import * as m from "./metrics.ts";
import { watchRematchRequests } from "./schema.ts";
import { loadCheckpoint, loadSolidifiedCheckpoint, recentBlocks, recentSolidifiedBlocks, type BlockRef, type MatcherDb } from "./store.ts";
import { stepRetryDelay } from "./stream.ts";
import { sleep } from "../common/timing.ts";
import { MAX_BLOCKS_PER_RANGE, type TronClient } from "../common/tron-node/client.ts";

/** How often the lease holder looks for requests. */
const POLL_MS = 1_000;
/** How long a request waits for the streams' runs in flight to be checkpointed. */
const IN_FLIGHT_WAIT_MS = 30_000;
/** How long served requests are kept (to see when repairs happened). */
const DONE_KEPT_MS = 7 * 24 * 3_600_000;

export interface RematchOptions {
  chainId: ChainId;
  client: TronClient;
  /** How the chain's account activity is decoded; null: transfers only. */
  activity: ActivityDecodeOptions | null;
  db: MatcherDb;
  lookup: WatchLookup;
  enqueue: (events: NewEvent[]) => Promise<void>;
  log: Logger;
  concurrency?: number;
  enqueueEvents?: number;
  pollMs?: number;
  /** The newest block each stream has started matching (0: none): a run in flight may have looked up before the repair. */
  matching?: () => { head: number; solidified: number };
}

export interface RematchResult {
  head: number;
  solidified: number;
}

export class Rematcher {
  private readonly concurrency: number;

  constructor(private readonly opts: RematchOptions) {
    this.concurrency = opts.concurrency ?? 16;
  }

  /** Serves requests until `signal` aborts; a failed attempt is retried (the request stays pending). */
  async run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      try {
        await this.once(signal);
        failures = 0;
        await sleep(this.opts.pollMs ?? POLL_MS, signal);
      } catch (err) {
        if (signal.aborted) break;
        failures++;
        const delay = stepRetryDelay(failures);
        this.opts.log.warn("re-match failed; retrying", { err, retryInMs: delay });
        await sleep(delay, signal);
      }
    }
  }

  /** Serves the chain's pending requests at once (their earliest starts); null when there were none. */
  async once(signal?: AbortSignal): Promise<RematchResult | null> {
    const { db, chainId, log } = this.opts;
    const pending = await db
      .select()
      .from(watchRematchRequests)
      .where(and(eq(watchRematchRequests.chainId, chainId), isNull(watchRematchRequests.doneAt)))
      .orderBy(asc(watchRematchRequests.id));
    if (pending.length === 0) return null;
    const headFrom = Math.min(...pending.map((r) => r.headFrom));
    const solidFrom = Math.min(...pending.map((r) => r.solidFrom));
    // Up to the streams' checkpoints now, and the runs they are matching: the repair was done before the request was
    // filed, so a run started after this read looks up the repaired index, but one in flight may have looked up before.
    const inFlight = this.opts.matching?.() ?? { head: 0, solidified: 0 };
    const headTo = Math.max((await loadCheckpoint(db, chainId))?.number ?? 0, inFlight.head);
    const solidTo = Math.max((await loadSolidifiedCheckpoint(db, chainId))?.number ?? 0, inFlight.solidified);
    // Only recorded blocks are re-matched: wait (bounded) for the runs in flight to be checkpointed or abandoned.
    const head = await this.reached(() => loadCheckpoint(db, chainId), headTo, signal);
    const solid = await this.reached(() => loadSolidifiedCheckpoint(db, chainId), solidTo, signal);
    const headBlocks = head ? await this.recorded(await recentBlocks(db, chainId, headFrom + 1), headFrom, Math.min(head.number, headTo), "head") : [];
    const solidBlocks = solid
      ? await this.recorded(await recentSolidifiedBlocks(db, chainId, solidFrom + 1), solidFrom, Math.min(solid.number, solidTo), "solidified")
      : [];
    const headCount = await this.rematch(headBlocks, "head", solid?.number ?? 0, signal);
    const solidCount = await this.rematch(solidBlocks, "solidified", solid?.number ?? 0, signal);
    if (signal?.aborted) return null;
    await db
      .update(watchRematchRequests)
      .set({ doneAt: new Date() })
      .where(inArray(watchRematchRequests.id, pending.map((r) => r.id)));
    await db.delete(watchRematchRequests).where(and(eq(watchRematchRequests.chainId, chainId), lt(watchRematchRequests.doneAt, new Date(Date.now() - DONE_KEPT_MS))));
    log.warn("watch index repaired: re-matched the blocks processed since its last clean check", {
      requests: pending.length,
      head: { from: headFrom + 1, to: headTo, blocks: headCount },
      solidified: { from: solidFrom + 1, to: solidTo, blocks: solidCount },
    });
    return { head: headCount, solidified: solidCount };
  }

  /**
   * The checkpoint once it reached `to`, or as it is after IN_FLIGHT_WAIT_MS (a run that failed is matched again by
   * its stream, after the repair).
   */
  private async reached(load: () => Promise<BlockRef | null>, to: number, signal?: AbortSignal): Promise<BlockRef | null> {
    const deadline = Date.now() + IN_FLIGHT_WAIT_MS;
    for (;;) {
      const cp = await load();
      if ((cp && cp.number >= to) || Date.now() >= deadline || signal?.aborted) return cp;
      await Bun.sleep(100);
    }
  }

  /** The recorded blocks in (from, to], oldest first; warns about the part older than the record (from −1: none yet). */
  private async recorded(refs: BlockRef[], from: number, to: number, stream: string): Promise<BlockRef[]> {
    const within = refs.filter((r) => r.number > from && r.number <= to).sort((a, b) => a.number - b.number);
    const oldest = within[0]?.number ?? to + 1;
    // from < 0: the stream had no checkpoint at the clean check, so its record is all it processed since.
    if (from >= 0 && oldest > from + 1 && to > from) {
      this.opts.log.warn("re-match: blocks older than the streams' record are not re-matched", {
        stream,
        from: from + 1,
        to: Math.min(oldest - 1, to),
      });
    }
    return within;
  }

  /** Re-reads `refs` from the node and matches the ones still carrying the recorded id; returns how many. */
  private async rematch(refs: BlockRef[], stream: "head" | "solidified", solidified: number, signal?: AbortSignal): Promise<number> {
    if (refs.length === 0) return 0;
    const { chainId, client, lookup, enqueue } = this.opts;
    const ids = new Map(refs.map((r) => [r.number, r.blockId]));
    const last = refs[refs.length - 1]!.number;
    let matched = 0;
    let next = refs[0]!.number;
    while (next <= last && !signal?.aborted) {
      const end = Math.min(next + MAX_BLOCKS_PER_RANGE, last + 1);
      const blocks: DecodedBlock[] = await fetchDecodedRange(client, next, end, this.concurrency, this.opts.activity);
      if (blocks.length === 0) throw new Error(`the node did not return block ${next} of ${chainId} to re-match`);
      const wanted = blocks.filter((b) => ids.get(b.number) === b.blockId);
      const out = new EnqueueBatch(enqueue, undefined, this.opts.enqueueEvents);
      await out.around(() =>
        mapLimit(wanted, this.concurrency, async (b) => {
          const ctx: BlockContext = { chainId, number: b.number, blockId: b.blockId, timestampMs: b.timestampMs };
          out.add(
            stream === "head"
              ? await matchBroadcasted(ctx, b, lookup)
              : await matchFinal(ctx, b, lookup, { solidifiedBlockNumber: solidified }),
          );
        }).then(() => {}),
      );
      matched += wanted.length;
      m.rematchedBlocks.inc({ chain: chainId, stream }, wanted.length);
      next = blocks[blocks.length - 1]!.number + 1;
    }
    return matched;
  }
}

