// Re-sealing stored values under the keyring's newest key (`bun run secrets rotate`, common/keyring.ts): every
// column holding sealed values is walked in primary-key order, a batch at a time, and each value not yet under the
// newest key is opened for its row and sealed again. Each row is written with a compare on the value read, so a
// concurrent write (a user rotating a subscription's secret, a new idempotency record) is never overwritten: the
// row is read again and, if still under an older key, re-sealed from what it now holds.
import { sql, type SQL } from "drizzle-orm";
import type { Executor } from "./pg-executor.ts";
import { sealedKeyId, UnreadableSecretError, type Keyring } from "./keyring.ts";

/** One column of sealed values and how its rows are bound (common/keyring.ts rowBinding). */
export interface SealedColumn {
  table: string;
  column: string;
  /** The primary key's columns (text), in order. */
  key: readonly string[];
  /** The row binding, from the primary key's values in `key` order. */
  binding(key: readonly string[]): string;
}

export interface ResealCounts {
  /** "<table>.<column>". */
  kind: string;
  /** Re-sealed under the newest key by this run. */
  rotated: number;
  /** Already under the newest key (also those a concurrent writer sealed meanwhile). */
  current: number;
  /** Opened by no key of the ring for their row: left as they are. */
  unreadable: number;
}

const BATCH = 500;
/** A row changed this many times between our read and our write is being written under an older key elsewhere. */
const MAX_RACES = 10;

export const sealedKind = (col: SealedColumn) => `${col.table}.${col.column}`;

type Row = Record<string, string | null>;

async function rows(db: Executor, query: SQL): Promise<Row[]> {
  return (await db.execute(query)) as unknown as Row[];
}

function keyMatch(col: SealedColumn, key: readonly string[]): SQL {
  return sql.join(col.key.map((k, i) => sql`${sql.identifier(k)} = ${key[i]}`), sql` and `);
}

/** Whether the table exists (a service that never ran on this database has not made its tables). */
export async function sealedTableExists(db: Executor, col: SealedColumn): Promise<boolean> {
  const [row] = await rows(db, sql`select to_regclass(${col.table})::text as t`);
  return row?.t !== null && row?.t !== undefined;
}

export interface ResealOptions {
  batch?: number;
  /** Runs between reading a row and writing it back (tests interleave a concurrent write here). */
  beforeWrite?: (key: readonly string[]) => Promise<void>;
}

export async function resealColumn(db: Executor, keyring: Keyring, col: SealedColumn, opts: ResealOptions = {}): Promise<ResealCounts> {
  const counts: ResealCounts = { kind: sealedKind(col), rotated: 0, current: 0, unreadable: 0 };
  const table = sql.identifier(col.table);
  const column = sql.identifier(col.column);
  const keyColumns = sql.join(col.key.map((k) => sql.identifier(k)), sql`, `);
  const keyOf = (row: Row) => col.key.map((k) => row[k]!);
  let after: readonly string[] | undefined;
  for (;;) {
    const from = after ? sql`and (${keyColumns}) > (${sql.join(after.map((v) => sql`${v}`), sql`, `)})` : sql``;
    const batch = await rows(
      db,
      sql`select ${keyColumns}, ${column} as sealed from ${table} where ${column} is not null ${from} order by ${keyColumns} limit ${opts.batch ?? BATCH}`,
    );
    for (const row of batch) {
      const key = keyOf(row);
      let sealed: string | null = row.sealed!;
      for (let race = 0; ; race++) {
        if (sealed === null) break; // deleted or cleared meanwhile
        if (keyring.isCurrent(sealed)) {
          counts.current++;
          break;
        }
        let fresh: string;
        try {
          fresh = keyring.seal(keyring.open(sealed, col.binding(key)), col.binding(key));
        } catch (err) {
          if (!(err instanceof UnreadableSecretError)) throw err;
          counts.unreadable++;
          break;
        }
        await opts.beforeWrite?.(key);
        const written = await rows(db, sql`update ${table} set ${column} = ${fresh} where ${keyMatch(col, key)} and ${column} = ${sealed} returning 1 as ok`);
        if (written.length > 0) {
          counts.rotated++;
          break;
        }
        if (race >= MAX_RACES) {
          throw new Error(`${counts.kind}: a row kept changing under an older key while being re-sealed; does every service run the new APP_SECRET?`);
        }
        const [now] = await rows(db, sql`select ${column} as sealed from ${table} where ${keyMatch(col, key)}`);
        sealed = now?.sealed ?? null;
      }
    }
    if (batch.length < (opts.batch ?? BATCH)) return counts;
    after = keyOf(batch.at(-1)!);
  }
}

/** How many values of the column each key id seals ("v1": sealed before key ids). */
export async function sealedKeyCounts(db: Executor, col: SealedColumn): Promise<Map<string, number>> {
  const column = sql.identifier(col.column);
  const found = await rows(
    db,
    sql`select left(${column}, position('.' in substr(${column}, 4)) + 3) as prefix, count(*)::text as n
        from ${sql.identifier(col.table)} where ${column} is not null group by 1 order by 1`,
  );
  const out = new Map<string, number>();
  for (const r of found) {
    const id = sealedKeyId(r.prefix ?? "");
    out.set(id, (out.get(id) ?? 0) + Number(r.n));
  }
  return out;
}
