// One active matcher per chain: a PostgreSQL session advisory lock held on a reserved connection. A crashed
// replica's connection closes and PostgreSQL frees the lock at once; a standby polling for it takes over.
// Fencing: the checkpoint is written through the very connection that holds the lock, inside a transaction that
// first checks pg_locks for this backend, so a replica that lost its lock (connection cut and silently
// re-established, say) can never move a checkpoint. Events it may still hand to the deliverer are harmless: the
// deliverer keeps one event per (subscription, chain, txId, logIndex).
import type { SQL } from "bun";
import { drizzle } from "drizzle-orm/bun-sql";
import type { Database } from "../common/db.ts";
import { matcherSchema, type MatcherSchema } from "./schema.ts";

/** First half of the two-int advisory lock key: "matcher" streams (the second half is the chain). */
export const LOCK_CLASS = 0x4d54; // "MT"

export function chainLockKey(chainId: string): number {
  return Bun.hash.crc32(chainId) & 0x7fffffff;
}

export interface ChainLease {
  chainId: string;
  /** Drizzle over the lock-holding connection: fenced writes go through it. */
  db: Database<MatcherSchema>;
  /** True while this connection still holds the lock. */
  held(): Promise<boolean>;
  release(): Promise<void>;
}

type Reserved = Awaited<ReturnType<SQL["reserve"]>>;

async function holds(conn: Reserved, key: number): Promise<boolean> {
  const rows = (await conn`
    SELECT 1 FROM pg_locks
    WHERE locktype = 'advisory' AND classid = ${LOCK_CLASS} AND objid = ${key} AND objsubid = 2
      AND pid = pg_backend_pid() AND granted`) as unknown[];
  return rows.length > 0;
}

/** Tries once; null when another replica holds the chain. */
export async function tryAcquireChainLease(sql: SQL, chainId: string): Promise<ChainLease | null> {
  const key = chainLockKey(chainId);
  const conn = await sql.reserve();
  try {
    const [row] = (await conn`SELECT pg_try_advisory_lock(${LOCK_CLASS}::int, ${key}::int) AS ok`) as { ok: boolean }[];
    if (!row?.ok) {
      conn.release();
      return null;
    }
  } catch (err) {
    conn.release();
    throw err;
  }
  let released = false;
  return {
    chainId,
    db: drizzle({ client: conn as unknown as SQL, schema: matcherSchema }) as unknown as Database<MatcherSchema>,
    held: () => (released ? Promise.resolve(false) : holds(conn, key).catch(() => false)),
    async release() {
      if (released) return;
      released = true;
      try {
        await conn`SELECT pg_advisory_unlock(${LOCK_CLASS}::int, ${key}::int)`;
      } catch {
        // The connection is gone, and the lock with it.
      } finally {
        conn.release();
      }
    },
  };
}

/** Waits for the chain's lease, polling every `retryMs`, until `signal` aborts (then null). */
export async function acquireChainLease(
  sql: SQL,
  chainId: string,
  opts: { retryMs?: number; signal?: AbortSignal; onWait?: () => void } = {},
): Promise<ChainLease | null> {
  let waited = false;
  while (!opts.signal?.aborted) {
    try {
      const lease = await tryAcquireChainLease(sql, chainId);
      if (lease) return lease;
    } catch {
      // Database unreachable: keep trying; readiness reports it.
    }
    if (!waited) opts.onWait?.();
    waited = true;
    await Bun.sleep(opts.retryMs ?? 1_000);
  }
  return null;
}
