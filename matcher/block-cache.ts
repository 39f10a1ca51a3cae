// What a chain's two streams share: the blocks the head stream fetched (decoded, transaction infos applied), so
// the solidified stream, which trails it by about 19 blocks, reads them here instead of asking the node again, and
// what each stream knows of the other (the node's head, the solidified stream's position) so neither fetches a
// block twice nor runs so far ahead that the blocks it fetched fall out of the cache before they are read.
import type { DecodedBlock } from "./fetch.ts";
import * as m from "./metrics.ts";
import { Notifier } from "../common/timing.ts";

/** Blocks kept: the solidified head's usual distance (19) with room for catch-up batches of both streams. */
export const BLOCK_CACHE_SIZE = 256;
/** A solidified stream that has not moved for this long is not waited for (it may be failing; the head goes on). */
const STALL_MS = 2_000;

export class StreamLink {
  private readonly blocks = new Map<number, DecodedBlock>();
  private readonly changes = new Notifier();
  private readonly hit: { inc(v?: number): void };
  private readonly miss: { inc(v?: number): void };
  /** The node's head as the head stream last saw it (0: not yet). */
  head = 0;
  /** The highest block number the head stream has fetched into the cache, or has passed (its checkpoint). */
  fetchedTo = 0;
  /** The next block the solidified stream needs, and the newest solidified head it knows (0: not yet). */
  solidNext = 0;
  solidHead = 0;
  private solidMovedAt = 0;

  constructor(
    chainId: string,
    readonly capacity = BLOCK_CACHE_SIZE,
  ) {
    this.hit = m.blockCache.labels({ chain: chainId, outcome: "hit" });
    this.miss = m.blockCache.labels({ chain: chainId, outcome: "miss" });
  }

  /** The head stream's blocks, fetched once; the oldest leave when the cache is full. */
  put(blocks: readonly DecodedBlock[]): void {
    for (const b of blocks) {
      this.blocks.delete(b.number);
      this.blocks.set(b.number, b);
      if (b.number > this.fetchedTo) this.fetchedTo = b.number;
    }
    while (this.blocks.size > this.capacity) {
      const oldest = this.blocks.keys().next().value as number;
      this.blocks.delete(oldest);
    }
    this.notify();
  }

  /** Block `n` as the head stream fetched it, or undefined (counted as a hit or a miss). */
  get(n: number): DecodedBlock | undefined {
    const b = this.blocks.get(n);
    (b ? this.hit : this.miss).inc();
    return b;
  }

  /** The head stream resumes after `n`: it will not fetch blocks up to there, so nobody should wait for them. */
  resumeAfter(n: number): void {
    this.fetchedTo = n;
    this.notify();
  }

  /** Whether block `n` is in the cache (not counted). */
  has(n: number): boolean {
    return this.blocks.has(n);
  }

  /** A fork: blocks above the common ancestor belong to the abandoned branch. */
  dropAbove(n: number): void {
    for (const k of [...this.blocks.keys()]) if (k > n) this.blocks.delete(k);
    if (this.fetchedTo > n) this.fetchedTo = n;
    this.notify();
  }

  noteHead(n: number): void {
    this.head = n;
    this.notify();
  }

  noteSolid(next: number, solidHead: number): void {
    if (next !== this.solidNext) this.solidMovedAt = Date.now();
    this.solidNext = next;
    this.solidHead = solidHead;
    this.notify();
  }

  /**
   * Whether the head stream should hold back before fetching from `start`: the solidified stream will need those
   * blocks too (they are at or below its head) and is far enough behind that they would leave the cache before it
   * reads them. It is not held back by a solidified stream that has stopped moving.
   */
  shouldHold(start: number, batch: number): boolean {
    if (this.solidNext === 0 || start > this.solidHead) return false;
    if (Date.now() - this.solidMovedAt > STALL_MS) return false;
    return start + batch - this.solidNext > this.capacity - batch;
  }

  /** Resolves on the next change (a block put, a new head, the solidified stream moving) or after `ms`. */
  changed(ms: number, signal: AbortSignal): Promise<void> {
    return this.changes.wait(ms, signal);
  }

  private notify(): void {
    this.changes.notify();
  }
}
