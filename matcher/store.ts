// The matcher's persistence: per-chain checkpoints and the ids of recently processed blocks. Reads go through the
// pool; writes go through the chain's lease (see lease.ts), and fail when the lease is gone.
import { and, desc, eq, gt, gte, lt, sql } from "drizzle-orm";
import { openDatabase, runMigrations, type Database, type DbOptions } from "../common/db.ts";
import { LOCK_CLASS, chainLockKey, type ChainLease } from "./lease.ts";
import { matcherBlocks, matcherCheckpoints, matcherSchema, type MatcherSchema } from "./schema.ts";

export type MatcherDb = Database<MatcherSchema>;

export const MATCHER_MIGRATIONS = new URL("./migrations", import.meta.url).pathname;
export const MATCHER_MIGRATIONS_TABLE = "__matcher_migrations";

/** How many processed block ids are kept per chain: the deepest fork the stream can follow by itself. */
export const BLOCK_HISTORY = 256;

export interface BlockRef {
  number: number;
  blockId: string;
}

export class LeaseLostError extends Error {
  constructor(chainId: string) {
    super(`the matcher lease of ${chainId} was lost`);
    this.name = "LeaseLostError";
  }
}

export async function openMatcherDatabase(url: string, opts: DbOptions = {}): Promise<MatcherDb> {
  const db = openDatabase(url, matcherSchema, opts) as MatcherDb;
  await runMigrations(db as unknown as Database<Record<string, unknown>>, MATCHER_MIGRATIONS, MATCHER_MIGRATIONS_TABLE);
  return db;
}

export async function loadCheckpoint(db: MatcherDb, chainId: string): Promise<BlockRef | null> {
  const [row] = await db.select().from(matcherCheckpoints).where(eq(matcherCheckpoints.chainId, chainId));
  return row ? { number: row.blockNumber, blockId: row.blockId } : null;
}

/** Processed block ids from `fromNumber` up, newest first. */
export async function recentBlocks(db: MatcherDb, chainId: string, fromNumber: number): Promise<BlockRef[]> {
  const rows = await db
    .select()
    .from(matcherBlocks)
    .where(and(eq(matcherBlocks.chainId, chainId), gte(matcherBlocks.blockNumber, fromNumber)))
    .orderBy(desc(matcherBlocks.blockNumber));
  return rows.map((r) => ({ number: r.blockNumber, blockId: r.blockId }));
}

async function fenced<T>(lease: ChainLease, work: (tx: Parameters<Parameters<MatcherDb["transaction"]>[0]>[0]) => Promise<T>): Promise<T> {
  return lease.db.transaction(async (tx) => {
    const rows = await tx.execute(sql`
      SELECT 1 AS held FROM pg_locks
      WHERE locktype = 'advisory' AND classid = ${LOCK_CLASS} AND objid = ${chainLockKey(lease.chainId)}
        AND objsubid = 2 AND pid = pg_backend_pid() AND granted`);
    if ((rows as unknown[]).length === 0) throw new LeaseLostError(lease.chainId);
    return work(tx);
  });
}

/** Moves the checkpoint to the last of `blocks` (processed in order) and remembers their ids. */
export async function advanceCheckpoint(lease: ChainLease, blocks: readonly BlockRef[]): Promise<void> {
  const last = blocks[blocks.length - 1];
  if (!last) return;
  const chainId = lease.chainId;
  await fenced(lease, async (tx) => {
    await tx
      .insert(matcherBlocks)
      .values(blocks.map((b) => ({ chainId, blockNumber: b.number, blockId: b.blockId })))
      .onConflictDoUpdate({ target: [matcherBlocks.chainId, matcherBlocks.blockNumber], set: { blockId: sql`excluded.block_id` } });
    await tx
      .insert(matcherCheckpoints)
      .values({ chainId, blockNumber: last.number, blockId: last.blockId })
      .onConflictDoUpdate({
        target: matcherCheckpoints.chainId,
        set: { blockNumber: last.number, blockId: last.blockId, updatedAt: new Date() },
      });
    await tx
      .delete(matcherBlocks)
      .where(and(eq(matcherBlocks.chainId, chainId), lt(matcherBlocks.blockNumber, last.number - BLOCK_HISTORY)));
  });
}

/** A fork: the checkpoint goes back to the common ancestor and the abandoned branch's ids are forgotten. */
export async function rollbackCheckpoint(lease: ChainLease, ancestor: BlockRef): Promise<void> {
  const chainId = lease.chainId;
  await fenced(lease, async (tx) => {
    await tx
      .delete(matcherBlocks)
      .where(and(eq(matcherBlocks.chainId, chainId), gt(matcherBlocks.blockNumber, ancestor.number)));
    await tx
      .insert(matcherBlocks)
      .values({ chainId, blockNumber: ancestor.number, blockId: ancestor.blockId })
      .onConflictDoUpdate({ target: [matcherBlocks.chainId, matcherBlocks.blockNumber], set: { blockId: ancestor.blockId } });
    await tx
      .insert(matcherCheckpoints)
      .values({ chainId, blockNumber: ancestor.number, blockId: ancestor.blockId })
      .onConflictDoUpdate({
        target: matcherCheckpoints.chainId,
        set: { blockNumber: ancestor.number, blockId: ancestor.blockId, updatedAt: new Date() },
      });
  });
}
