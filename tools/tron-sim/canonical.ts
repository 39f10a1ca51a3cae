// The canonical chain's blocks by position (0 = the first block): an array, except for one stretch that may be
// served by a source instead (the backlog generated on demand, backlog.ts), so a long backlog costs no memory. Only
// the tail ever changes (new blocks, forks); a fork reaching into that stretch takes its blocks out of the source.

/** A stretch of blocks made when asked. */
export interface BlockSource<B> {
  /** The block at `index` of the stretch (0 = its first). */
  get(index: number): B;
}

export class CanonicalBlocks<B> {
  private readonly blocks: B[] = [];
  /** Where the source's stretch sits (positions `at` .. `at + count - 1`), if there is one. */
  private stretch: { at: number; count: number; source: BlockSource<B> } | null = null;

  get length(): number {
    return this.blocks.length + (this.stretch?.count ?? 0);
  }

  /** The block at position `i`, undefined outside 0..length-1. */
  get(i: number): B | undefined {
    if (!Number.isInteger(i) || i < 0 || i >= this.length) return undefined;
    const s = this.stretch;
    if (!s || i < s.at) return this.blocks[i];
    if (i < s.at + s.count) return s.source.get(i - s.at);
    return this.blocks[i - s.count];
  }

  push(block: B): void {
    this.blocks.push(block);
  }

  /** Appends `count` blocks served by `source` (once, before any later block). */
  defer(source: BlockSource<B>, count: number): void {
    if (this.stretch) throw new Error("the chain already has a deferred stretch");
    this.stretch = { at: this.blocks.length, count, source };
  }

  /** Removes the blocks from position `start` to the end and returns them (deferred ones made now). */
  truncate(start: number): B[] {
    const s = this.stretch;
    if (s && start < s.at + s.count) {
      const from = Math.max(start, s.at);
      const made: B[] = [];
      for (let i = from; i < s.at + s.count; i++) made.push(s.source.get(i - s.at));
      this.blocks.splice(s.at, 0, ...made);
      s.count = from - s.at;
    }
    const tail = this.blocks.length - (this.length - start);
    return this.blocks.splice(tail);
  }
}
