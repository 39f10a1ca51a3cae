// `bun run keys create|list|revoke|chains`: API key management straight on the registry's database (no running
// service needed). Migrations run first. `create` prints the key id on a line of its own and the key alone on the
// last line of stdout; the key is shown once and only its SHA-256 is stored.
import { parseArgs } from "node:util";
import { ApiError, TRON_CHAINS } from "../common/contract/index.ts";
import { isId } from "../common/ids.ts";
import { checkKeyChains } from "../registry/rules.ts";
import type { ApiKeyRow } from "../registry/schema.ts";
import type { Changed } from "../registry/db/types.ts";
import { POLL_MS } from "../registry/watch-index/applier.ts";
import { untilApplied } from "../registry/watch-index/settle.ts";
import { runCli, UsageError, withSession, type Session } from "./registry-cli.ts";

/** How long a key change waits for a registry to apply it to the watch index: a few of the appliers' polls. */
const APPLY_WAIT_MS = 8 * POLL_MS;

const USAGE = `Usage:
  bun run keys create [--name NAME] [--chains ${TRON_CHAINS.join(",")}]
  bun run keys list
  bun run keys revoke KEY_ID
  bun run keys chains KEY_ID CHAIN[,CHAIN...]
Chains: ${TRON_CHAINS.join(", ")} (create defaults to all three).`;

function splitChains(text: string): string[] {
  const parts = text.split(",").map((s) => s.trim());
  if (parts.some((p) => p === "")) throw new UsageError(`invalid chain list "${text}"`);
  try {
    return checkKeyChains(parts, false);
  } catch (err) {
    if (err instanceof ApiError) throw new UsageError(err.message);
    throw err;
  }
}

function keyIdArg(value: string | undefined): string {
  if (value === undefined) throw new UsageError("missing KEY_ID");
  if (!isId("key", value)) throw new UsageError(`"${value}" is not a key id (key_ followed by a ULID)`);
  return value;
}

function describeKey(row: ApiKeyRow): string {
  const state = row.revokedAt ? `revoked ${row.revokedAt.toISOString()}` : "active";
  return [row.id, JSON.stringify(row.name), row.chains.join(","), row.createdAt.toISOString(), state].join("\t");
}

/**
 * Revocation and chain changes reach the watch index through the outbox rows committed with them
 * (registry/watch-index/outbox.ts); a running registry's applier takes them up within its poll interval, so the command
 * waits for that (bounded) and says so when no registry took them: the first one that starts applies them. This CLI
 * never touches Redis.
 */
async function changeKey<T>(session: Session, change: () => Promise<Changed<T> | undefined>): Promise<T | undefined> {
  const done = await change();
  if (!done) return undefined;
  if (!(await untilApplied(session.store.db, done.ticket.ids, { budgetMs: APPLY_WAIT_MS, askEvery: 1 }))) {
    console.error("note: no running registry has applied this to the watch index yet; the next one to run will");
  }
  return done.row;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    if (command === undefined) throw new UsageError("missing command");
    console.log(USAGE);
    return 0;
  }

  switch (command) {
    case "create": {
      const { values, positionals } = parseArgs({
        args: rest,
        options: { name: { type: "string" }, chains: { type: "string" } },
        allowPositionals: true,
        strict: true,
      });
      if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
      const chains = values.chains === undefined ? [...TRON_CHAINS] : splitChains(values.chains);
      const name = values.name ?? "";
      return withSession(async (session) => {
        const issued = await session.store.createApiKey(name, chains);
        console.log(`Created API key${name ? ` "${name}"` : ""} for ${issued.row.chains.join(", ")}:`);
        console.log(issued.row.id);
        console.log("The key below is shown only this once; only its SHA-256 is stored:");
        console.log(issued.secret);
        return 0;
      });
    }
    case "list": {
      if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`);
      return withSession(async (session) => {
        const rows = await session.store.listApiKeys();
        console.log(["id", "name", "chains", "created", "state"].join("\t"));
        for (const row of rows) console.log(describeKey(row));
        return 0;
      });
    }
    case "revoke": {
      if (rest.length > 1) throw new UsageError(`unexpected argument "${rest[1]}"`);
      const id = keyIdArg(rest[0]);
      return withSession(async (session) => {
        const row = await changeKey(session, () => session.store.revokeApiKey(id));
        if (!row) {
          console.error(`error: no API key ${id}`);
          return 1;
        }
        console.log(`Revoked ${row.id} at ${row.revokedAt!.toISOString()}`);
        return 0;
      });
    }
    case "chains": {
      if (rest.length > 2) throw new UsageError(`unexpected argument "${rest[2]}"`);
      const id = keyIdArg(rest[0]);
      if (rest[1] === undefined) throw new UsageError("missing chain list");
      const chains = splitChains(rest[1]);
      return withSession(async (session) => {
        const row = await changeKey(session, () => session.store.setApiKeyChains(id, chains));
        if (!row) {
          console.error(`error: no API key ${id}`);
          return 1;
        }
        console.log(`${row.id} chains: ${row.chains.join(",")}`);
        return 0;
      });
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

await runCli(USAGE, main);
