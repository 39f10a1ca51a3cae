// APP_SECRET and INTERNAL_TOKEN: from the environment, or generated once and kept in the database so every replica
// and every restart agrees on them (docs/CONTRACT.md "Running it").
import { randomBytes } from "node:crypto";
import type { SQL } from "bun";
import type { Config } from "./config.ts";
import { hasPerCallerCredentials } from "./internal-auth.ts";
import { Keyring } from "./keyring.ts";
import type { Logger } from "./logger.ts";

/**
 * The value kept under `name` in app_settings (common/settings/schema.ts; the service migrated it when it opened its
 * database): the first writer's candidate wins, every later reader gets the same one.
 */
async function keptSetting(sql: SQL, name: string, candidate: string): Promise<string> {
  await sql`INSERT INTO app_settings (name, value) VALUES (${name}, ${candidate}) ON CONFLICT (name) DO NOTHING`;
  const [row] = await sql`SELECT value FROM app_settings WHERE name = ${name}`;
  return (row as { value: string }).value;
}

/**
 * The keyring of APP_SECRET (common/keyring.ts), or the one key generated once and kept in the database. The kept
 * key sits next to the values it protects, so a service using it says so at every start (`log`).
 */
export async function loadAppKeys(sql: SQL, fromEnv: string | undefined, log: Pick<Logger, "warn">): Promise<Keyring> {
  if (fromEnv) return Keyring.parse(fromEnv);
  log.warn("APP_SECRET is not set: secrets at rest are encrypted with the key generated once and kept in the database (app_settings), next to what it protects; set APP_SECRET for production", {});
  return Keyring.parse(await keptSetting(sql, "app_secret", randomBytes(32).toString("base64")));
}

/**
 * The root internal credential every caller's token is derived from (common/internal-auth.ts): INTERNAL_TOKEN, or,
 * when no internal credential is configured at all (`npm start`), one generated once and kept in the database, so a
 * service split off later on the same database can be given the same value. With per-caller tokens configured and
 * no INTERNAL_TOKEN there is no root: nothing is derived, nothing is kept.
 */
export async function loadInternalRoot(sql: SQL, config: Pick<Config, "internalToken" | "internalTokens" | "internalTokenDigests">): Promise<string | undefined> {
  if (config.internalToken) return config.internalToken;
  if (hasPerCallerCredentials(config)) return undefined;
  return keptSetting(sql, "internal_token", randomBytes(32).toString("base64url"));
}
