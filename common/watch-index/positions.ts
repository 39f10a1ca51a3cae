// Where PostgreSQL says each shard stands (watch_index_positions), for both services (README.md "Positions").
import { sql, type SQL } from "drizzle-orm";

/** The row of watch_index_positions that holds a chain's pruned mark (applied rows up to it are deleted). */
export const PRUNED_SHARD = -1;

export interface SqlExecutor {
  execute(query: SQL): PromiseLike<unknown>;
}

export interface AppliedPositions {
  /** Per shard (index), the position of the last change applied to it; 0 when none. */
  shards: number[];
  /** Applied rows up to this position are gone: a shard behind it cannot be replayed. */
  pruned: number;
}

/** One indexed read of at most shards + 1 rows. */
export async function readAppliedPositions(db: SqlExecutor, chainId: string, shards: number): Promise<AppliedPositions> {
  const rows = (await db.execute(
    sql`SELECT shard, position FROM watch_index_positions WHERE chain_id = ${chainId}`,
  )) as unknown as { shard: number; position: number | string }[];
  const out: AppliedPositions = { shards: new Array<number>(shards).fill(0), pruned: 0 };
  for (const r of rows) {
    if (r.shard === PRUNED_SHARD) out.pruned = Number(r.position);
    else if (r.shard >= 0 && r.shard < shards) out.shards[r.shard] = Number(r.position);
  }
  return out;
}

/** Raises shards' positions (never lowers one), inside the caller's transaction. */
export async function raiseAppliedPositions(db: SqlExecutor, chainId: string, positions: ReadonlyMap<number, number>): Promise<void> {
  if (positions.size === 0) return;
  const shards = [...positions.keys()];
  const values = shards.map((s) => positions.get(s)!);
  await db.execute(sql`
    INSERT INTO watch_index_positions (chain_id, shard, position)
    SELECT ${chainId}, s, p FROM unnest(${`{${shards.join(",")}}`}::int[], ${`{${values.join(",")}}`}::bigint[]) AS v(s, p)
    ON CONFLICT (chain_id, shard) DO UPDATE SET position = GREATEST(watch_index_positions.position, EXCLUDED.position)`);
}

/** `n` fresh positions in increasing order (a sequence: never handed out twice, even by a transaction rolled back). */
export async function allocatePositions(db: SqlExecutor, n: number): Promise<number[]> {
  if (n === 0) return [];
  const rows = (await db.execute(
    sql`SELECT nextval('watch_position_seq') AS p FROM generate_series(1, ${n}::int)`,
  )) as unknown as { p: number | string }[];
  return rows.map((r) => Number(r.p)).sort((a, b) => a - b);
}
