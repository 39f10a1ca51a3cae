// APP_SECRET: from the environment, or generated once and kept in the database so every replica and every
// restart agrees on it (CONTRACT.md "Running it").
import { randomBytes } from "node:crypto";
import type { SQL } from "bun";
import { deriveKeys, type AppKeys } from "./crypto.ts";

export async function loadAppKeys(sql: SQL, fromEnv: string | undefined): Promise<AppKeys> {
  if (fromEnv) return deriveKeys(fromEnv);
  await sql`CREATE TABLE IF NOT EXISTS app_settings (name text PRIMARY KEY, value text NOT NULL)`;
  const candidate = randomBytes(32).toString("base64");
  await sql`INSERT INTO app_settings (name, value) VALUES ('app_secret', ${candidate}) ON CONFLICT (name) DO NOTHING`;
  const [row] = await sql`SELECT value FROM app_settings WHERE name = 'app_secret'`;
  return deriveKeys((row as { value: string }).value);
}
