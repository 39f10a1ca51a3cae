// PostgreSQL through Bun's native SQL driver and Drizzle. Each service owns its tables and its migrations folder;
// they share one database (DATABASE_URL) and keep separate migration journals.
import { SQL } from "bun";
import { drizzle, type BunSQLDatabase } from "drizzle-orm/bun-sql";
import { migrate } from "drizzle-orm/bun-sql/migrator";
import { ApiError } from "./errors.ts";
import { log } from "./logger.ts";
import { postgresReachable } from "./reachability.ts";

export type Database<TSchema extends Record<string, unknown> = Record<string, never>> = BunSQLDatabase<TSchema> & {
  $client: SQL;
};

export interface DbOptions {
  /** Pool size. */
  max?: number;
}

export function openSql(url: string, opts: DbOptions = {}): SQL {
  return new SQL(url, {
    max: opts.max ?? 20,
    // A dead server must surface as an error quickly (503 within 5 s), never as a hang.
    connectionTimeout: 3,
    idleTimeout: 30,
  });
}

export function openDatabase<TSchema extends Record<string, unknown>>(
  url: string,
  schema: TSchema,
  opts: DbOptions = {},
): Database<TSchema> {
  return drizzle({ client: openSql(url, opts), schema }) as Database<TSchema>;
}

/**
 * Creates the database named in `url` when it does not exist yet (a fresh machine's first `npm start`). Every entry
 * point calls it first: when no server answers at the URL's address, the process ends with one line naming it and
 * DATABASE_URL (nothing works without PostgreSQL), not with a driver's stack trace.
 */
export async function ensureDatabase(url: string): Promise<void> {
  if (!(await postgresReachable(url, log))) process.exit(1);
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ""));
  if (!name) return;
  const admin = new URL(url);
  admin.pathname = "/postgres";
  const sql = new SQL(admin.toString(), { max: 1, connectionTimeout: 5 });
  try {
    const rows = await sql`SELECT 1 FROM pg_database WHERE datname = ${name}`;
    if (rows.length === 0) {
      try {
        await sql.unsafe(`CREATE DATABASE "${name.replaceAll('"', '""')}"`);
      } catch (err) {
        // Another service of the same stack may have created it a moment ago.
        if (!/already exists/.test(String(err))) throw err;
      }
    }
  } finally {
    await sql.close();
  }
}

export async function runMigrations(
  db: Database<Record<string, unknown>>,
  migrationsFolder: string,
  migrationsTable: string,
): Promise<void> {
  // Several services (or replicas) may start at once: serialize migrations with an advisory lock.
  const client = db.$client;
  const reserved = await client.reserve();
  try {
    await reserved`SELECT pg_advisory_lock(hashtext(${migrationsTable}))`;
    await migrate(db, { migrationsFolder, migrationsTable, migrationsSchema: "public" });
  } finally {
    await reserved`SELECT pg_advisory_unlock(hashtext(${migrationsTable}))`.catch(() => {});
    reserved.release();
  }
}

// Connection-level failures (server down, refused, reset, timed out) as Bun's SQL driver reports them.
const UNAVAILABLE = /ERR_POSTGRES_CONNECTION_(?:CLOSED|TIMEOUT|REFUSED|FAILED)|ERR_POSTGRES_LIFETIME_TIMEOUT|ECONNREFUSED|ECONNRESET|connection (?:closed|refused|timeout)|Connection closed|socket|ERR_POSTGRES_IDLE_TIMEOUT|the database system is (?:starting up|shutting down)|terminating connection|too many clients|remaining connection slots/i;

export function isUnavailable(err: unknown): boolean {
  if (err instanceof ApiError) return false;
  const e = err as { code?: unknown; errno?: unknown; message?: unknown; cause?: unknown };
  const text = `${String(e?.code ?? "")} ${String(e?.errno ?? "")} ${String(e?.message ?? "")}`;
  if (UNAVAILABLE.test(text)) return true;
  return e?.cause !== undefined && e.cause !== err ? isUnavailable(e.cause) : false;
}

/**
 * Longest a write waits for the answer to a COMMIT it already sent once its deadline has passed (the database froze
 * with the COMMIT in flight): the answer must be the real outcome, so it waits this long before giving up. Callers
 * of a write RPC allow for it in their own deadline.
 */
export const COMMIT_SETTLE_MS = 30_000;

/** Runs a store operation, turning a dead database into the public 503 (nothing was changed). */
export async function withDatabase<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isUnavailable(err)) {
      throw new ApiError("service_unavailable", "The database is unavailable; nothing was changed. Try again shortly.");
    }
    throw err;
  }
}
