// The matcher's read of PostgreSQL's applied watch-index positions (common/watch-positions.ts), once per block lookup
// and shared: a lookup must compare Redis with positions read no earlier than itself, so a lookup that arrives while a
// read is under way does not take that read's answer (it may predate a change the lookup must see) but the next one,
// started as soon as the current one ends. Concurrent lookups of a chain (a catch-up batch, both streams) therefore
// share at most two reads in flight, each a primary-key read of WATCH_INDEX_SHARDS + 1 rows.
import { readAppliedPositions, type SqlExecutor } from "./positions.ts";

interface ChainReads {
  current: Promise<readonly number[]> | undefined;
  next: Promise<readonly number[]> | undefined;
}

export class AppliedPositionsReader {
  private readonly chains = new Map<string, ChainReads>();

  constructor(
    private readonly db: SqlExecutor,
    private readonly shards: number,
  ) {}

  /** Per shard, the position PostgreSQL says was applied, read after this call began. */
  read(chainId: string): Promise<readonly number[]> {
    let st = this.chains.get(chainId);
    if (!st) this.chains.set(chainId, (st = { current: undefined, next: undefined }));
    const reads = st;
    if (!reads.current) return (reads.current = this.start(chainId, reads));
    reads.next ??= reads.current
      .catch(() => {})
      .then(() => {
        reads.next = undefined;
        return (reads.current ??= this.start(chainId, reads));
      });
    return reads.next;
  }

  private start(chainId: string, reads: ChainReads): Promise<readonly number[]> {
    const p: Promise<readonly number[]> = readAppliedPositions(this.db, chainId, this.shards)
      .then((a) => a.shards)
      .finally(() => {
        if (reads.current === p) reads.current = undefined;
      });
    return p;
  }
}
