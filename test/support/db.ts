// Each test run gets its own PostgreSQL database (dropped afterwards) so runs never collide. A database for a stack
// is cloned from a template that already holds every service's migrations (CREATE DATABASE … TEMPLATE copies files,
// where migrating a fresh database runs ~80 statements through three migrators); the template is named by a digest
// of every migration file, so a changed or added migration makes a new one and a stale one is never used.
import { SQL } from "bun";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const ROOT = join(import.meta.dir, "..", "..");
/** Every migration set a service database holds; the template is migrated with all of them. */
const MIGRATION_FOLDERS = ["registry/migrations", "deliverer/migrations", "matcher/migrations", "common/settings/migrations"];
const TEMPLATE_PREFIX = "webhooks_template_";

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

export interface TestDatabaseOptions {
  /** Clone the template that holds every service's migrations instead of starting empty (default false). */
  migrated?: boolean;
}

function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

function migrationsDigest(): string {
  const hash = createHash("sha256");
  for (const folder of MIGRATION_FOLDERS) {
    const dir = join(ROOT, folder);
    for (const file of readdirSync(dir, { recursive: true }).map(String).sort()) {
      if (!file.endsWith(".sql") && !file.endsWith(".json")) continue;
      hash.update(`${folder}/${file}\0`).update(readFileSync(join(dir, file))).update("\0");
    }
  }
  return hash.digest("hex").slice(0, 16);
}

let template: Promise<string> | undefined;

/** The migrated template's name, made once per digest (serialized across test processes by an advisory lock). */
function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const name = TEMPLATE_PREFIX + migrationsDigest();
    const admin = new SQL(ADMIN_URL, { max: 1 });
    try {
      await admin`SELECT pg_advisory_lock(hashtext(${TEMPLATE_PREFIX}))`;
      const [exists] = await admin`SELECT 1 AS one FROM pg_database WHERE datname = ${name} AND datistemplate`;
      if (!exists) {
        // A template left half-made by a killed run is dropped and made again.
        await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        await admin.unsafe(`CREATE DATABASE "${name}"`);
        await migrate(databaseUrl(name));
        await admin.unsafe(`ALTER DATABASE "${name}" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
      }
      await admin`SELECT pg_advisory_unlock(hashtext(${TEMPLATE_PREFIX}))`;
    } finally {
      await admin.close();
    }
    return name;
  })();
  return template;
}

async function migrate(url: string): Promise<void> {
  // Imported here: only the migrated databases need the services' migration sets.
  const { openRegistryDatabase } = await import("../../registry/db/connection.ts");
  const { openDelivererDatabase } = await import("../../deliverer/db/connection.ts");
  const { openMatcherDatabase } = await import("../../matcher/store.ts");
  for (const open of [openRegistryDatabase, openDelivererDatabase, openMatcherDatabase]) {
    // Two: the migrator holds one connection for its advisory lock and migrates on another.
    const db = await open(url, { max: 2 });
    await db.$client.close();
  }
}

export async function createTestDatabase(label = "t", opts: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const name = `webhooks_${label.replace(/[^a-z0-9_]/gi, "").toLowerCase()}_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
  const from = opts.migrated ? ` TEMPLATE "${await migratedTemplate()}"` : "";
  const admin = new SQL(ADMIN_URL, { max: 1 });
  try {
    await admin.unsafe(`CREATE DATABASE "${name}"${from}`);
  } finally {
    await admin.close();
  }
  return {
    url: databaseUrl(name),
    name,
    async drop() {
      const a = new SQL(ADMIN_URL, { max: 1 });
      try {
        await a.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await a.close();
      }
    },
  };
}
