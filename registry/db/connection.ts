// The registry's database: its connection types and pools, and what every use's module (this folder) needs of the
// store. A leaf: it imports nothing of the folder, so no import circle can run through it.
import { SETTINGS_MIGRATIONS } from "../../common/settings/migrate.ts";
import { openDatabase, openMigratedDatabase, type Database, type DbOptions } from "../../common/db.ts";
import { registrySchema, type RegistrySchema } from "../schema.ts";

export type RegistryDb = Database<RegistrySchema>;
export type RegistryTx = Parameters<Parameters<RegistryDb["transaction"]>[0]>[0];
/** Either the pool or an open transaction: queries that may run inside someone else's transaction take this. */
export type RegistryExecutor = RegistryDb | RegistryTx;

export const REGISTRY_MIGRATIONS = new URL("../migrations", import.meta.url).pathname;
export const REGISTRY_MIGRATIONS_TABLE = "__registry_migrations";

/**
 * Connections of the read pool: the hot single-statement reads (GetSubscription, ResolveApiKey, the existence check
 * of PUT) run on their own small pool. Under 64 concurrent GETs, 4 connections answered about 35% more than the
 * main pool's 20 (fewer PostgreSQL backends competing for 2 cores), while commits want many connections (create
 * halved on 4), so writes and transactions stay on the main pool.
 */
export const READ_POOL_SIZE = 4;

export function openRegistryReadPool(url: string, max = READ_POOL_SIZE): RegistryDb {
  return openDatabase(url, registrySchema, { max }) as RegistryDb;
}

export async function openRegistryDatabase(url: string, opts: DbOptions = {}): Promise<RegistryDb> {
  const own = { folder: REGISTRY_MIGRATIONS, table: REGISTRY_MIGRATIONS_TABLE };
  return openMigratedDatabase(url, registrySchema, [own, SETTINGS_MIGRATIONS], opts);
}
/** What a use's module needs of the store (db/store.ts): its pools, its 503 and deadline rules, and sealing. */
export interface RegistryAccess {
  readonly db: RegistryDb;
  /** The pool of the hot reads (openRegistryReadPool), or the main pool. */
  readonly readDb: RegistryDb;
  /** Database work under the store's 503 and deadline rules. */
  run<T>(fn: (db: RegistryDb) => Promise<T>, deadlineMs?: number): Promise<T>;
  /** A write in one transaction under the commit fence (common/db.ts writeTransaction). */
  write<T>(fn: (tx: RegistryTx) => Promise<T>, deadlineMs?: number): Promise<T>;
  /** Seals `plaintext` for the row `binding` names (registry/sealed-columns.ts). */
  seal(plaintext: string, binding: string): string;
  open(sealed: string, binding: string): string;
}
