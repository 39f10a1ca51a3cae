// The migrations of app_settings (common/settings/schema.ts): every service that reads the table applies them when
// it opens its database (openMigratedDatabase in common/db.ts); runMigrations' advisory lock serializes services
// starting at once.
import type { MigrationSet } from "../db.ts";

export const SETTINGS_MIGRATIONS: MigrationSet = {
  folder: new URL("./migrations", import.meta.url).pathname,
  table: "__settings_migrations",
};
