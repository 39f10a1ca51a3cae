// PostgreSQL through Bun's native SQL driver and Drizzle. Each service owns its tables and its migrations folder;
// they share one database (DATABASE_URL) and keep separate migration journals.
import type { Config } from "./config.ts";
import { SQL } from "bun";
import { sql } from "drizzle-orm";
import { drizzle, type BunSQLDatabase } from "drizzle-orm/bun-sql";
import { migrate } from "drizzle-orm/bun-sql/migrator";
import { COMMIT_SETTLE_MS, DB_CONNECT_TIMEOUT_MS, STORE_DEADLINE_MS } from "./deadlines.ts";
import { ApiError } from "./contract/index.ts";
import { log } from "./logger.ts";
import { postgresReachable } from "./reachability.ts";
import { orAfter, withTimeout } from "./timing.ts";

export type Database<TSchema extends Record<string, unknown> = Record<string, never>> = BunSQLDatabase<TSchema> & {
  $client: SQL;
};

/**
 * Text from outside (a destination's response body, a broker's or a TLS library's reason) as PostgreSQL's text can
 * hold it: a NUL character is refused in any text value, and one such value in a batch statement fails the whole
 * batch, so it becomes U+FFFD, as an undecodable byte does.
 */
export function pgText<T extends string | null>(text: T): T {
  return (text !== null && text.includes("\0") ? text.replaceAll("\0", "\uFFFD") : text) as T;
}

export interface DbOptions {
  /** Pool size. */
  max?: number;
  /** PostgreSQL settings for each connection of the pool (runtime-config-client parameters). */
  settings?: Record<string, string>;
}

/**
 * Settings of every service connection. JIT compilation off: PostgreSQL compiles a statement whose estimated cost
 * passes jit_above_cost, and a generic plan over the daily partitions is estimated at every partition's share, however
 * few rows it reads. At 10,000,000 events a subscription's page of 50 (GET /v1/subscriptions/:id/events) passed it:
 * each run compiled 370 functions for 381 buffer hits, 0.6–1.6 s a request, 237 ms of PostgreSQL's CPU (bench/events.ts,
 * auto_explain); nothing the services run reads enough rows for compiled code to pay that back.
 */
const SERVICE_SETTINGS: Record<string, string> = { jit: "off" };

/** A pool's size: its own `preferred` size, capped by DATABASE_POOL_MAX when that is set. */
export function poolSize(config: Pick<Config, "databasePoolMax">, preferred: number): number {
  return config.databasePoolMax === undefined ? preferred : Math.min(preferred, config.databasePoolMax);
}

function openSql(url: string, opts: DbOptions = {}): SQL {
  return new SQL(url, {
    max: opts.max ?? 20,
    // A dead server must surface as an error (503), never as a hang: in whole seconds, as the driver takes it.
    connectionTimeout: DB_CONNECT_TIMEOUT_MS / 1000,
    idleTimeout: 30,
    connection: { ...SERVICE_SETTINGS, ...opts.settings },
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

/** A migrations folder and the journal table that records it (each service keeps its own journal). */
export interface MigrationSet {
  folder: string;
  table: string;
}

/** Opens a service's database and brings each of its migration sets up to date, in order. */
export async function openMigratedDatabase<TSchema extends Record<string, unknown>>(
  url: string,
  schema: TSchema,
  sets: readonly MigrationSet[],
  opts: DbOptions = {},
): Promise<Database<TSchema>> {
  const db = openDatabase(url, schema, opts);
  for (const set of sets) await runMigrations(db as unknown as Database<Record<string, unknown>>, set.folder, set.table);
  return db;
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

function isUnavailable(err: unknown): boolean {
  if (err instanceof ApiError) return false;
  const e = err as { code?: unknown; errno?: unknown; message?: unknown; cause?: unknown };
  const text = `${String(e?.code ?? "")} ${String(e?.errno ?? "")} ${String(e?.message ?? "")}`;
  if (UNAVAILABLE.test(text)) return true;
  return e?.cause !== undefined && e.cause !== err ? isUnavailable(e.cause) : false;
}

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

export interface GuardOptions {
  /** Before this the call answers 503 (default STORE_DEADLINE_MS). */
  deadlineMs?: number;
  /** Counts each 503 the guard gives (a service's own metric). */
  onUnavailable?: () => void;
}

function unavailable(): ApiError {
  return new ApiError("service_unavailable", "The database is unavailable; nothing was changed. Try again shortly.");
}

/** withDatabase plus a deadline: a connection that stops answering (not just one that is refused) still ends. */
export async function guard<T>(fn: () => Promise<T>, opts: GuardOptions = {}): Promise<T> {
  try {
    return await withTimeout(withDatabase(fn), opts.deadlineMs ?? STORE_DEADLINE_MS, unavailable);
  } catch (err) {
    if (err instanceof ApiError && err.code === "service_unavailable") opts.onUnavailable?.();
    throw err;
  }
}

/** Handed to a write's transaction: `commit()` is its last call, made just before drizzle sends COMMIT. */
interface CommitFence {
  /** Throws (so the transaction rolls back) when the caller was already answered 503; else marks COMMIT as sent. */
  commit(): void;
  /** Whether COMMIT was let go (its outcome is then unknown until PostgreSQL answers). */
  readonly sent: boolean;
}

const DEADLINE = Symbol("deadline");

/**
 * guard for writes: a 503 means nothing changed. Before COMMIT is sent the deadline answers 503 at once and the
 * fence makes the transaction roll back whenever the database answers again; once COMMIT is sent, the outcome
 * is waited for (at most `settleMs`), so a write that landed is never reported as a failure.
 */
async function guardCommit<T>(fn: (fence: CommitFence) => Promise<T>, opts: GuardOptions, settleMs: number): Promise<T> {
  let answered = false;
  let commitSent = false;
  const fence: CommitFence = {
    commit() {
      if (answered) throw unavailable();
      commitSent = true;
    },
    get sent() {
      return commitSent;
    },
  };
  const work = withDatabase(() => fn(fence));
  try {
    const first = await orAfter(work, opts.deadlineMs ?? STORE_DEADLINE_MS, DEADLINE);
    if (first !== DEADLINE) return first;
    // Checked and set in one step: the transaction's fence either already let COMMIT go, or will refuse it.
    if (!commitSent) {
      answered = true;
      opts.onUnavailable?.();
      throw unavailable();
    }
    const settled = await orAfter(work, settleMs, DEADLINE);
    if (settled !== DEADLINE) return settled;
    answered = true;
    opts.onUnavailable?.();
    throw new ApiError("service_unavailable", "The database did not confirm the change in time; check its state before retrying.");
  } catch (err) {
    if (err instanceof ApiError && err.code === "service_unavailable" && !answered) opts.onUnavailable?.();
    throw err;
  }
}

/** Any service's Drizzle database, as far as a write transaction needs it. */
interface Transactional<Tx> {
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  $client: SQL;
}

/** Whether a transaction committed, asked on another connection until PostgreSQL answers (COMMIT_SETTLE_MS). */
async function committed(client: SQL, txid: string, settleMs: number, onUnavailable: (() => void) | undefined): Promise<boolean> {
  const until = Date.now() + settleMs;
  for (;;) {
    try {
      const rows = await guard(() => client`select txid_status(${txid}::bigint) as status`, { deadlineMs: 2_000, onUnavailable });
      return (rows as { status: string | null }[])[0]?.status === "committed";
    } catch (err) {
      if (Date.now() > until) throw err;
      await Bun.sleep(200);
    }
  }
}

/**
 * The one way a store writes (both the registry's and the deliverer's): `fn` in one transaction under the commit
 * fence, so a 503 means nothing changed. A deadline before COMMIT answers 503 and rolls the transaction back; once
 * COMMIT is sent the answer waits for its outcome, and when the connection failed with COMMIT in flight (its answer
 * lost) PostgreSQL is asked whether the transaction committed.
 */
export function writeTransaction<Tx extends { execute: (query: ReturnType<typeof sql>) => Promise<unknown> }, T>(
  db: Transactional<Tx>,
  fn: (tx: Tx) => Promise<T>,
  opts: GuardOptions = {},
  settleMs = COMMIT_SETTLE_MS,
): Promise<T> {
  return guardCommit(
    async (fence) => {
      let txid: string | undefined;
      let result: { value: T } | undefined;
      try {
        return await db.transaction(async (tx) => {
          const [row] = (await tx.execute(sql`select txid_current()::text as txid`)) as { txid: string }[];
          txid = row?.txid;
          const value = await fn(tx);
          result = { value };
          fence.commit();
          return value;
        });
      } catch (err) {
        if (fence.sent && txid !== undefined && result !== undefined && (await committed(db.$client, txid, settleMs, opts.onUnavailable))) return result.value;
        throw err;
      }
    },
    opts,
    settleMs,
  );
}
