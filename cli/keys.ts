// `bun run keys create|list|revoke|chains|quotas`: API key management straight on the registry's database (no running
// service needed). Migrations run first. `create` prints the key id on a line of its own and the key alone on the
// last line of stdout; the key is shown once and only its SHA-256 is stored.
import { parseArgs } from "node:util";
import { ApiError, TRON_CHAINS } from "../common/contract/index.ts";
import { loadConfig } from "../common/config.ts";
import { isId } from "../common/ids.ts";
import { parseQuotaValue, QUOTA_DEFAULTS, QUOTAS, quotaLimit, type QuotaOverrides } from "../common/quotas.ts";
import { keyOverrides } from "../registry/quotas.ts";
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
  bun run keys quotas KEY_ID [--subscriptions N] [--addresses N] [--deliveries N] [--streams N]
Chains: ${TRON_CHAINS.join(", ")} (create defaults to all three).
Quotas: without options, shows the key's limits; N is a whole number, or "default" for the operator's default
(${QUOTAS.map((q) => QUOTA_DEFAULTS[q].variable).join(", ")}).`;

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
  const overrides = Object.entries(keyOverrides(row)).map(([q, n]) => `${q}=${n}`);
  return [row.id, JSON.stringify(row.name), row.chains.join(","), row.createdAt.toISOString(), state, overrides.join(",") || "default"].join("\t");
}

/** One line per quota: its name, the limit in force, and whether it is the key's own or the default. */
function describeQuotas(row: ApiKeyRow): string[] {
  const defaults = loadConfig().quotas;
  const overrides = keyOverrides(row);
  return QUOTAS.map((q) => {
    const source = overrides[q] === undefined ? `default (${QUOTA_DEFAULTS[q].variable})` : "this key's own";
    return [q, String(quotaLimit(q, overrides, defaults)), source].join("\t");
  });
}

/** The overrides after applying the options given ("default" removes one). */
function changedQuotas(current: QuotaOverrides, values: Record<string, string | undefined>): QuotaOverrides {
  const next = { ...current };
  for (const q of QUOTAS) {
    const raw = values[q];
    if (raw === undefined) continue;
    if (raw === "default") delete next[q];
    else {
      try {
        next[q] = parseQuotaValue(raw, `--${q}`);
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
    }
  }
  return next;
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
        console.log(["id", "name", "chains", "created", "state", "quotas"].join("\t"));
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
    case "quotas": {
      const { values, positionals } = parseArgs({
        args: rest,
        options: Object.fromEntries(QUOTAS.map((q) => [q, { type: "string" as const }])),
        allowPositionals: true,
        strict: true,
      });
      if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}"`);
      const id = keyIdArg(positionals[0]);
      const given = values as Record<string, string | undefined>;
      // Checked before the database is opened: a wrong value changes nothing.
      changedQuotas({}, given);
      return withSession(async (session) => {
        let row = await session.store.getApiKey(id);
        if (row && QUOTAS.some((q) => given[q] !== undefined)) row = await session.store.setApiKeyQuotas(id, changedQuotas(keyOverrides(row), given));
        if (!row) {
          console.error(`error: no API key ${id}`);
          return 1;
        }
        console.log(["quota", "limit", "source"].join("\t"));
        for (const line of describeQuotas(row)) console.log(line);
        return 0;
      });
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

await runCli(USAGE, main);
