// What the registry's command-line tools (`bun run keys`, `bun run brokers`) share: the session on the registry's
// database (created and migrated when missing, no running service needed) and the exit codes: 0 done, 1 refused or
// not found, 2 bad input (the message and the usage on stderr).
import { loadAppKeys } from "../common/app-secret.ts";
import { loadConfig, type Config } from "../common/config.ts";
import { ensureDatabase } from "../common/db.ts";
import { ApiError } from "../common/contract/index.ts";
import type { Keyring } from "../common/keyring.ts";
import { openRegistryDatabase } from "../registry/db/connection.ts";
import { RegistryStore } from "../registry/db/store.ts";

/** Bad input: exit code 2, the message and the usage on stderr. */
export class UsageError extends Error {}

export interface Session {
  config: Config;
  store: RegistryStore;
  keyring: Keyring;
}

export async function openSession(): Promise<Session> {
  const config = loadConfig();
  await ensureDatabase(config.databaseUrl);
  const db = await openRegistryDatabase(config.databaseUrl, { max: 2 });
  // The services warn about a generated APP_SECRET at every start; a tool stays quiet (`secrets` says it itself).
  const keyring = await loadAppKeys(db.$client, config.appSecret, { warn: () => {} });
  return { config, keyring, store: new RegistryStore(db, { keyring }) };
}

/** Runs `fn` on a fresh session and closes its store. */
export async function withSession<T>(fn: (session: Session) => Promise<T>): Promise<T> {
  const session = await openSession();
  try {
    return await fn(session);
  } finally {
    await session.store.close();
  }
}

/**
 * Runs a tool's `main` on the command line's arguments and sets the exit code. `explain` may reword the message of
 * a refusal (exit code 1).
 */
export async function runCli(usage: string, main: (argv: string[]) => Promise<number>, explain: (message: string) => string = (m) => m): Promise<void> {
  try {
    process.exitCode = await main(process.argv.slice(2));
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      console.error(`error: ${(err as Error).message}\n\n${usage}`);
      process.exitCode = 2;
    } else {
      const message = err instanceof ApiError ? err.message : ((err as Error).message ?? String(err));
      console.error(`error: ${explain(message)}`);
      process.exitCode = 1;
    }
  }
}
