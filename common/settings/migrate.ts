// Brings app_settings (common/settings/schema.ts) up to date on a service's database; migrations of several
// services starting at once are serialized by runMigrations' advisory lock.
import { drizzle } from "drizzle-orm/bun-sql";
import type { SQL } from "bun";
import { runMigrations, type Database } from "../db.ts";

export const SETTINGS_MIGRATIONS = new URL("./migrations", import.meta.url).pathname;
export const SETTINGS_MIGRATIONS_TABLE = "__settings_migrations";

export async function migrateSettings(client: SQL): Promise<void> {
  const db = drizzle({ client }) as Database<Record<string, unknown>>;
  await runMigrations(db, SETTINGS_MIGRATIONS, SETTINGS_MIGRATIONS_TABLE);
}
