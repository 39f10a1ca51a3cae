// app_settings comes from a drizzle migration (common/settings/): every service that keeps APP_SECRET or
// INTERNAL_TOKEN in the database creates it when it opens its database, and a database set up before the
// migration (the table already there, made at run time) keeps its values.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { SQL } from "bun";
import { loadAppKeys, loadInternalRoot } from "../../../common/app-secret.ts";
import { SETTINGS_MIGRATIONS } from "../../../common/settings/migrate.ts";

const SETTINGS_MIGRATIONS_TABLE = SETTINGS_MIGRATIONS.table;
const NO_INTERNAL_CREDENTIALS = { internalToken: undefined, internalTokens: {}, internalTokenDigests: {} };
import { openDelivererDatabase } from "../../../deliverer/db/connection.ts";
import { openRegistryDatabase } from "../../../registry/db/connection.ts";
import { createTestDatabase, type TestDatabase } from "../../support/db.ts";

let database: TestDatabase;
let sql: SQL;

beforeEach(async () => {
  database = await createTestDatabase("settings");
  sql = new SQL(database.url, { max: 2 });
}, 60_000);

afterEach(async () => {
  await sql?.close();
  await database?.drop();
}, 60_000);

async function tableExists(name: string): Promise<boolean> {
  const [row] = (await sql`SELECT to_regclass(${`public.${name}`}) IS NOT NULL AS ok`) as { ok: boolean }[];
  return row!.ok;
}

test("the deliverer alone on a fresh database migrates app_settings and keeps its generated secrets there", async () => {
  const db = await openDelivererDatabase(database.url, { max: 2 });
  try {
    expect(await tableExists("app_settings")).toBe(true);
    expect(await tableExists(SETTINGS_MIGRATIONS_TABLE)).toBe(true);
    const token = await loadInternalRoot(db.$client, NO_INTERNAL_CREDENTIALS);
    const keys = await loadAppKeys(db.$client, undefined, { warn: () => {} });
    // Asked again, the same values: they were kept, not generated anew.
    expect(await loadInternalRoot(db.$client, NO_INTERNAL_CREDENTIALS)).toBe(token);
    expect((await loadAppKeys(db.$client, undefined, { warn: () => {} })).newest.encryptionKey.equals(keys.newest.encryptionKey)).toBe(true);
    const names = (await sql`SELECT name FROM app_settings ORDER BY name`) as { name: string }[];
    expect(names.map((r) => r.name)).toEqual(["app_secret", "internal_token"]);
    // A service on the kept key is told so every time; one given APP_SECRET is not.
    const warnings: string[] = [];
    const warn = { warn: (msg: string) => void warnings.push(msg) };
    await loadAppKeys(db.$client, undefined, warn);
    await loadAppKeys(db.$client, undefined, warn);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain("APP_SECRET is not set");
    await loadAppKeys(db.$client, Buffer.alloc(32, 9).toString("base64"), warn);
    expect(warnings).toHaveLength(2);
  } finally {
    await db.$client.close();
  }
}, 60_000);

test("a database whose app_settings predates the migration keeps its values; registry and deliverer both migrate it once", async () => {
  await sql`CREATE TABLE app_settings (name text PRIMARY KEY, value text NOT NULL)`;
  await sql`INSERT INTO app_settings (name, value) VALUES ('internal_token', 'kept-from-before-the-migration-0123456789')`;
  const registry = await openRegistryDatabase(database.url, { max: 2 });
  const deliverer = await openDelivererDatabase(database.url, { max: 2 });
  try {
    expect(await loadInternalRoot(registry.$client, NO_INTERNAL_CREDENTIALS)).toBe("kept-from-before-the-migration-0123456789");
    expect(await loadInternalRoot(deliverer.$client, NO_INTERNAL_CREDENTIALS)).toBe("kept-from-before-the-migration-0123456789");
    const applied = (await sql.unsafe(`SELECT count(*)::int AS n FROM "${SETTINGS_MIGRATIONS_TABLE}"`)) as { n: number }[];
    expect(applied[0]!.n).toBe(1);
  } finally {
    await registry.$client.close();
    await deliverer.$client.close();
  }
}, 60_000);
