// One advisory lock per chain, so one applier, replay, prune or rebuild runs on it at a time (README.md "Chain lock").
import type { SQL } from "bun";
import { sql } from "drizzle-orm";
import type { SqlExecutor } from "../../common/watch-index/positions.ts";

/** The lock's first key; the chain id is the second. */
const NAMESPACE = "watch-outbox";

/** In the caller's transaction, without waiting: true when the transaction now holds the chain until it ends. */
export async function tryChainLock(tx: SqlExecutor, chainId: string): Promise<boolean> {
  const [row] = (await tx.execute(
    sql`SELECT pg_try_advisory_xact_lock(hashtext(${NAMESPACE}), hashtext(${chainId})) AS ok`,
  )) as unknown as { ok: boolean }[];
  return row?.ok === true;
}

/** On a reserved connection, waiting for it: held across transactions (the rebuild) until releaseChainLock. */
export async function holdChainLock(conn: SQL, chainId: string): Promise<void> {
  await conn`SELECT pg_advisory_lock(hashtext(${NAMESPACE}), hashtext(${chainId}))`;
}

export async function releaseChainLock(conn: SQL, chainId: string): Promise<void> {
  await conn`SELECT pg_advisory_unlock(hashtext(${NAMESPACE}), hashtext(${chainId}))`;
}

/** Whether nobody holds the chain right now (taken and given back at once). */
export async function chainFree(client: SQL, chainId: string): Promise<boolean> {
  const reserved = await client.reserve();
  try {
    const [row] = (await reserved`SELECT pg_try_advisory_lock(hashtext(${NAMESPACE}), hashtext(${chainId})) AS ok`) as { ok: boolean }[];
    if (row?.ok) await releaseChainLock(reserved, chainId);
    return row?.ok === true;
  } finally {
    reserved.release();
  }
}
