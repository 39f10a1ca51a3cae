// The matcher's shared reads of PostgreSQL's applied positions, never older than the lookup (README.md "Lookups").
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
