// The matcher's persistence: per-chain checkpoints of both streams, the ids of recently processed blocks, and the
// transfers of fork-replaced blocks awaiting the solidified chain. Reads go through the pool; writes go through the
// chain's lease (see lease.ts), and fail when the lease is gone.
import { and, desc, eq, gt, gte, inArray, lt, sql } from "drizzle-orm";
import type { DecodedTransfer } from "./decode.ts";
import { openMigratedDatabase, type Database, type DbOptions } from "../common/db.ts";
import { LOCK_CLASS, chainLockKey, type ChainLease } from "./lease.ts";
import {
  matcherBlocks,
  matcherCheckpoints,
  matcherPendingDrops,
  matcherSchema,
  matcherSolidifiedBlocks,
  matcherSolidifiedCheckpoints,
  matcherSolidifiedTxs,
  type MatcherSchema,
} from "./schema.ts";

export type MatcherDb = Database<MatcherSchema>;

export const MATCHER_MIGRATIONS = new URL("./migrations", import.meta.url).pathname;
export const MATCHER_MIGRATIONS_TABLE = "__matcher_migrations";

/** How many processed block ids are kept per chain: the deepest fork the stream can follow by itself. */
export const BLOCK_HISTORY = 256;

export interface BlockRef {
  number: number;
  blockId: string;
}

/** A processed block; above the solidified head it keeps its timestamp and transfers (pending drops if forked). */
export interface ProcessedBlock extends BlockRef {
  timestampMs?: number;
  transfers?: DecodedTransfer[];
}

/** A transfer of a fork-replaced block, waiting for the solidified chain to include it or pass its expiration. */
export interface PendingDrop {
  block: { number: number; blockId: string; timestampMs: number };
  expirationMs: number;
  transfer: DecodedTransfer;
}

export class LeaseLostError extends Error {
  constructor(chainId: string) {
    super(`the matcher lease of ${chainId} was lost`);
    this.name = "LeaseLostError";
  }
}

export async function openMatcherDatabase(url: string, opts: DbOptions = {}): Promise<MatcherDb> {
  return openMigratedDatabase(url, matcherSchema, [{ folder: MATCHER_MIGRATIONS, table: MATCHER_MIGRATIONS_TABLE }], opts);
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

/** Moves the checkpoint to the last of `blocks` (processed in order) and remembers their ids (and transfers). */
export async function advanceCheckpoint(lease: ChainLease, blocks: readonly ProcessedBlock[]): Promise<void> {
  const last = blocks[blocks.length - 1];
  if (!last) return;
  const chainId = lease.chainId;
  await fenced(lease, async (tx) => {
    await tx
      .insert(matcherBlocks)
      .values(
        blocks.map((b) => ({
          chainId,
          blockNumber: b.number,
          blockId: b.blockId,
          timestampMs: b.timestampMs ?? null,
          transfers: b.transfers ?? null,
        })),
      )
      .onConflictDoUpdate({
        target: [matcherBlocks.chainId, matcherBlocks.blockNumber],
        set: { blockId: sql`excluded.block_id`, timestampMs: sql`excluded.timestamp_ms`, transfers: sql`excluded.transfers` },
      });
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

/**
 * A fork: the checkpoint goes back to the common ancestor and the abandoned branch's ids are forgotten; in the same
 * transaction its successful (broadcasted) transfers become pending drops, so a crash cannot lose them.
 */
export async function rollbackCheckpoint(lease: ChainLease, ancestor: BlockRef): Promise<void> {
  const chainId = lease.chainId;
  await fenced(lease, async (tx) => {
    await tx.execute(sql`
      INSERT INTO matcher_pending_drops
        (chain_id, tx_id, log_index, internal_index, block_number, block_id, block_timestamp_ms, expiration_ms, transfer)
      SELECT b.chain_id, t->>'txId', (t->>'logIndex')::int, (t->>'internalIndex')::int, b.block_number, b.block_id,
             b.timestamp_ms, (t->>'expirationMs')::bigint, t
      FROM matcher_blocks b CROSS JOIN LATERAL jsonb_array_elements(b.transfers) AS t
      WHERE b.chain_id = ${chainId} AND b.block_number > ${ancestor.number} AND b.transfers IS NOT NULL
        AND b.timestamp_ms IS NOT NULL AND t->>'result' = 'SUCCESS'
      ON CONFLICT DO NOTHING`);
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

export async function loadSolidifiedCheckpoint(db: MatcherDb, chainId: string): Promise<BlockRef | null> {
  const [row] = await db.select().from(matcherSolidifiedCheckpoints).where(eq(matcherSolidifiedCheckpoints.chainId, chainId));
  return row ? { number: row.blockNumber, blockId: row.blockId } : null;
}

/** Every pending drop of the chain (few: only forks above the solidified head make them). */
export async function loadPendingDrops(db: MatcherDb, chainId: string): Promise<PendingDrop[]> {
  const rows = await db.select().from(matcherPendingDrops).where(eq(matcherPendingDrops.chainId, chainId));
  return rows.map((r) => ({
    block: { number: r.blockNumber, blockId: r.blockId, timestampMs: r.blockTimestampMs },
    expirationMs: r.expirationMs,
    transfer: r.transfer,
  }));
}

/** A block the solidified stream made final events from, with the transactions of its transfers. */
export interface SolidifiedBlock extends BlockRef {
  txIds: readonly string[];
}

/** Which of `txIds` a solidified block already included, by the record advanceSolidifiedCheckpoint keeps. */
export async function solidifiedIncluded(db: MatcherDb, chainId: string, txIds: readonly string[]): Promise<Set<string>> {
  if (txIds.length === 0) return new Set();
  const rows = await db
    .select({ txId: matcherSolidifiedTxs.txId })
    .from(matcherSolidifiedTxs)
    .where(and(eq(matcherSolidifiedTxs.chainId, chainId), inArray(matcherSolidifiedTxs.txId, [...txIds])));
  return new Set(rows.map((r) => r.txId));
}

/**
 * The solidified stream's checkpoint moves to `last`, and the pending drops it settled (included by a solidified
 * block, or made into failed / dropped events) go, in one transaction: a crash before it re-reads the blocks and
 * settles them again (the deliverer keeps one event per transfer and kind). The transactions of `blocks` the head
 * stream did not process as the same block (another id there, or none yet) are recorded: a rollback of the head
 * stream may later make them pending drops, which that record settles (a confirmed transfer is never dropped).
 * Where the head stream has the same block, its copy is final and can never become a drop, so nothing is written.
 */
export async function advanceSolidifiedCheckpoint(
  lease: ChainLease,
  last: BlockRef,
  settled: readonly PendingDrop[],
  blocks: readonly SolidifiedBlock[] = [],
): Promise<void> {
  const chainId = lease.chainId;
  await fenced(lease, async (tx) => {
    // A rollback never goes below the oldest remembered head-stream block: below it no drop can be made any more.
    const [oldest] = await tx
      .select({ n: sql<string | number | null>`min(${matcherBlocks.blockNumber})` })
      .from(matcherBlocks)
      .where(eq(matcherBlocks.chainId, chainId));
    const floor = oldest?.n === null || oldest?.n === undefined ? null : Number(oldest.n);
    if (floor !== null && blocks.length > 0) {
      const first = blocks[0]!.number;
      const heads = await tx
        .select({ number: matcherBlocks.blockNumber, blockId: matcherBlocks.blockId })
        .from(matcherBlocks)
        .where(and(eq(matcherBlocks.chainId, chainId), gte(matcherBlocks.blockNumber, first), lt(matcherBlocks.blockNumber, last.number + 1)));
      const headIds = new Map(heads.map((h) => [h.number, h.blockId]));
      const rows: { tx_id: string; block_number: number }[] = [];
      for (const b of blocks) {
        if (b.number < floor || headIds.get(b.number) === b.blockId) continue;
        for (const id of new Set(b.txIds)) rows.push({ tx_id: id, block_number: b.number });
      }
      if (rows.length > 0) {
        // One parameter however many rows (a catch-up batch of a busy chain has thousands).
        await tx.execute(sql`
          INSERT INTO matcher_solidified_txs (chain_id, tx_id, block_number)
          SELECT ${chainId}, r.tx_id, r.block_number FROM jsonb_to_recordset(${JSON.stringify(rows)}::text::jsonb) AS r(tx_id text, block_number bigint)
          ON CONFLICT DO NOTHING`);
      }
    }
    if (blocks.length > 0) {
      await tx
        .insert(matcherSolidifiedBlocks)
        .values(blocks.map((b) => ({ chainId, blockNumber: b.number, blockId: b.blockId })))
        .onConflictDoUpdate({ target: [matcherSolidifiedBlocks.chainId, matcherSolidifiedBlocks.blockNumber], set: { blockId: sql`excluded.block_id` } });
      await tx
        .delete(matcherSolidifiedBlocks)
        .where(and(eq(matcherSolidifiedBlocks.chainId, chainId), lt(matcherSolidifiedBlocks.blockNumber, last.number - BLOCK_HISTORY)));
    }
    if (floor !== null) {
      await tx.delete(matcherSolidifiedTxs).where(and(eq(matcherSolidifiedTxs.chainId, chainId), lt(matcherSolidifiedTxs.blockNumber, floor)));
    }
    for (const d of settled) {
      await tx
        .delete(matcherPendingDrops)
        .where(
          and(
            eq(matcherPendingDrops.chainId, chainId),
            eq(matcherPendingDrops.txId, d.transfer.txId),
            eq(matcherPendingDrops.logIndex, d.transfer.logIndex),
            eq(matcherPendingDrops.internalIndex, d.transfer.internalIndex),
          ),
        );
    }
    await tx
      .insert(matcherSolidifiedCheckpoints)
      .values({ chainId, blockNumber: last.number, blockId: last.blockId })
      .onConflictDoUpdate({
        target: matcherSolidifiedCheckpoints.chainId,
        set: { blockNumber: last.number, blockId: last.blockId, updatedAt: new Date() },
      });
  });
}

/** Block ids the solidified stream confirmed, from `fromNumber` up, newest first. */
export async function recentSolidifiedBlocks(db: MatcherDb, chainId: string, fromNumber: number): Promise<BlockRef[]> {
  const rows = await db
    .select()
    .from(matcherSolidifiedBlocks)
    .where(and(eq(matcherSolidifiedBlocks.chainId, chainId), gte(matcherSolidifiedBlocks.blockNumber, fromNumber)))
    .orderBy(desc(matcherSolidifiedBlocks.blockNumber));
  return rows.map((r) => ({ number: r.blockNumber, blockId: r.blockId }));
}

/**
 * The solidified checkpoint was on a block a fork replaced: it goes back to the common ancestor and the dead
 * branch's ids are forgotten. The record of what it included stays: those events were sent, and a transfer
 * confirmed from them must still never be dropped.
 */
export async function rollbackSolidifiedCheckpoint(lease: ChainLease, ancestor: BlockRef): Promise<void> {
  const chainId = lease.chainId;
  await fenced(lease, async (tx) => {
    await tx
      .delete(matcherSolidifiedBlocks)
      .where(and(eq(matcherSolidifiedBlocks.chainId, chainId), gt(matcherSolidifiedBlocks.blockNumber, ancestor.number)));
    await tx
      .insert(matcherSolidifiedBlocks)
      .values({ chainId, blockNumber: ancestor.number, blockId: ancestor.blockId })
      .onConflictDoUpdate({ target: [matcherSolidifiedBlocks.chainId, matcherSolidifiedBlocks.blockNumber], set: { blockId: ancestor.blockId } });
    await tx
      .insert(matcherSolidifiedCheckpoints)
      .values({ chainId, blockNumber: ancestor.number, blockId: ancestor.blockId })
      .onConflictDoUpdate({
        target: matcherSolidifiedCheckpoints.chainId,
        set: { blockNumber: ancestor.number, blockId: ancestor.blockId, updatedAt: new Date() },
      });
  });
}
