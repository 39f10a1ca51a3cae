// `bun run secrets rotate|status`: the values sealed with APP_SECRET's keyring (common/keyring.ts) — subscriptions'
// signing secrets, broker URLs, stored idempotent responses of the registry and the deliverer — straight on the
// database (no running service needed; the registry's migrations run first). Exit codes as `bun run keys`: 0 done,
// 1 some value opens under no key of APP_SECRET (left as it is), 2 bad input (usage).
import { parseArgs } from "node:util";
import { idempotencySealedColumn } from "../common/idempotency.ts";
import { resealColumn, sealedKeyCounts, sealedKind, sealedTableExists, type SealedColumn } from "../common/reseal.ts";
import { deliveryIdempotency } from "../deliverer/schema.ts";
import { REGISTRY_SEALED_COLUMNS } from "../registry/sealed-columns.ts";
import { runCli, UsageError, withSession, type Session } from "./registry-cli.ts";

const USAGE = `Usage:
  bun run secrets rotate [--batch N]
  bun run secrets status
rotate: re-seals every stored secret, broker URL and idempotency response under APP_SECRET's newest key (the first
of KEY_ID:BASE64,...), bound to its row, and prints per kind how many it re-sealed and how many were current already.
Roll the new APP_SECRET out to every service first; run it again at will (it only touches what is not current).
status: how many stored values each key id seals ("v1": sealed before key ids). Drop a key from APP_SECRET once
status shows nothing under it.`;

/** Every sealed column on the database: the registry's, and the deliverer's responses. */
const SEALED_COLUMNS: readonly SealedColumn[] = [...REGISTRY_SEALED_COLUMNS, idempotencySealedColumn(deliveryIdempotency)];

/** A tool's stdout is its answer: notes go to stderr. */
function noteGeneratedKey(session: Session): void {
  if (session.config.appSecret !== undefined) return;
  console.error("note: APP_SECRET is not set: the values are sealed with the key generated once and kept in the database (app_settings, key id k0)");
}

/** The columns whose tables exist (the deliverer's appear once a deliverer has run on this database). */
async function presentColumns(session: Session): Promise<SealedColumn[]> {
  const out: SealedColumn[] = [];
  for (const col of SEALED_COLUMNS) {
    if (await sealedTableExists(session.store.db, col)) out.push(col);
    else console.error(`note: ${col.table} does not exist on this database yet; nothing to re-seal there`);
  }
  return out;
}

async function rotate(session: Session, batch: number | undefined): Promise<number> {
  const { keyring } = session;
  noteGeneratedKey(session);
  const totals = { rotated: 0, current: 0, unreadable: 0 };
  console.log(["kind", "rotated", "current", "unreadable"].join("\t"));
  for (const col of await presentColumns(session)) {
    const counts = await resealColumn(session.store.db, keyring, col, batch === undefined ? {} : { batch });
    console.log([counts.kind, counts.rotated, counts.current, counts.unreadable].join("\t"));
    totals.rotated += counts.rotated;
    totals.current += counts.current;
    totals.unreadable += counts.unreadable;
  }
  console.log(`Key ${keyring.newest.id}: ${totals.rotated} value(s) re-sealed, ${totals.current} current already, ${totals.unreadable} unreadable`);
  if (totals.unreadable > 0) {
    console.error(`error: ${totals.unreadable} stored value(s) open under no key of APP_SECRET (${keyring.keys.map((k) => k.id).join(", ")}) and were left as they are; put the key that sealed them back in APP_SECRET and run rotate again`);
    return 1;
  }
  return 0;
}

async function status(session: Session): Promise<number> {
  noteGeneratedKey(session);
  console.log(`APP_SECRET keys, newest first: ${session.keyring.keys.map((k) => k.id).join(", ")}`);
  console.log(["kind", "key", "values"].join("\t"));
  for (const col of await presentColumns(session)) {
    for (const [key, n] of await sealedKeyCounts(session.store.db, col)) console.log([sealedKind(col), key, n].join("\t"));
  }
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined) throw new UsageError("missing command");
  if (command === "help" || command === "--help" || command === "-h") {
    console.log(USAGE);
    return 0;
  }
  switch (command) {
    case "rotate": {
      const { values, positionals } = parseArgs({ args: rest, options: { batch: { type: "string" } }, allowPositionals: true, strict: true });
      if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
      const batch = values.batch === undefined ? undefined : Number(values.batch);
      if (batch !== undefined && (!Number.isInteger(batch) || batch < 1 || batch > 10_000)) throw new UsageError(`--batch must be an integer from 1 to 10000`);
      return withSession((session) => rotate(session, batch));
    }
    case "status": {
      if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`);
      return withSession(status);
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

await runCli(USAGE, main);
