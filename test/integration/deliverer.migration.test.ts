// The migration that made the transfer identity (subscription, kind, chain, txId, logIndex, internalIndex): events
// stored before it keep their ids and payloads, get internal_index -1, and the new key is the one enforced.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import { openDatabase, runMigrations, type Database } from "../../common/db.ts";
import { DELIVERER_MIGRATIONS, DELIVERER_MIGRATIONS_TABLE } from "../../deliverer/store.ts";
import { delivererSchema } from "../../deliverer/schema.ts";
import { createTestDatabase, type TestDatabase } from "../support/db.ts";

let database: TestDatabase;
let sql: SQL;
let firstOnly: string;

beforeAll(async () => {
  database = await createTestDatabase("delmig");
  sql = new SQL(database.url, { max: 2 });
  // The migrations folder as it was before the identity migration: the first entry of the journal alone.
  firstOnly = mkdtempSync(join(tmpdir(), "deliverer-migrations-"));
  cpSync(DELIVERER_MIGRATIONS, firstOnly, { recursive: true });
  const journalPath = join(firstOnly, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: { tag: string }[] };
  expect(journal.entries[0]!.tag).toBe("0000_events");
  writeFileSync(journalPath, JSON.stringify({ ...journal, entries: journal.entries.slice(0, 1) }));
}, 60_000);

afterAll(async () => {
  await sql?.close();
  await database?.drop();
  if (firstOnly) rmSync(firstOnly, { recursive: true, force: true });
}, 60_000);

async function migrate(folder: string): Promise<void> {
  const db = openDatabase(database.url, delivererSchema, { max: 2 }) as unknown as Database<Record<string, unknown>>;
  try {
    await runMigrations(db, folder, DELIVERER_MIGRATIONS_TABLE);
  } finally {
    await db.$client.close();
  }
}

test("existing events keep their ids; the unique key becomes (subscription, kind, chain, txId, logIndex, internalIndex)", async () => {
  await migrate(firstOnly);
  const at = new Date("2026-11-20T10:00:00.000Z");
  const old = [
    { id: "evt_01JOLDAAAAAAAAAAAAAAAAAAAA", kind: "wallet.transfer.broadcasted", chain: "tron:mainnet", tx: "aa".repeat(32), li: -1 },
    { id: "evt_01JOLDBBBBBBBBBBBBBBBBBBBB", kind: "wallet.transfer.broadcasted", chain: "tron:mainnet", tx: "aa".repeat(32), li: 2 },
    { id: "evt_01JOLDCCCCCCCCCCCCCCCCCCCC", kind: "service.ping", chain: null, tx: null, li: null },
  ];
  for (const e of old) {
    await sql`INSERT INTO events (id, subscription_id, kind, chain_id, tx_id, log_index, payload, status, created_at, updated_at)
      VALUES (${e.id}, 'sub_01JOLDSUBSCRIPTIONAAAAAAAA', ${e.kind}, ${e.chain}, ${e.tx}, ${e.li},
        ${JSON.stringify({ id: e.id, kind: e.kind })}::text::jsonb, 'delivered', ${at}, ${at})`;
  }
  await migrate(DELIVERER_MIGRATIONS);

  const rows = (await sql`SELECT id, kind, log_index, internal_index, payload->>'id' AS pid FROM events ORDER BY id`) as {
    id: string;
    kind: string;
    log_index: number | null;
    internal_index: number;
    pid: string;
  }[];
  expect(rows.map((r) => [r.id, r.pid, r.internal_index])).toEqual(old.map((e) => [e.id, e.id, -1]));

  const indexes = (await sql`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'events' AND indexdef LIKE 'CREATE UNIQUE%'`) as {
    indexname: string;
    indexdef: string;
  }[];
  expect(indexes.map((i) => i.indexname).sort()).toEqual(["events_pkey", "events_transfer_kind_uq"]);
  expect(indexes.find((i) => i.indexname === "events_transfer_kind_uq")!.indexdef).toContain(
    "(subscription_id, kind, chain_id, tx_id, log_index, internal_index)",
  );

  // The same transfer as a confirmed event, and an internal transfer of the same transaction: both new.
  const insert = (id: string, kind: string, ii: number) => sql`INSERT INTO events
      (id, subscription_id, kind, chain_id, tx_id, log_index, internal_index, payload, status, created_at, updated_at)
    VALUES (${id}, 'sub_01JOLDSUBSCRIPTIONAAAAAAAA', ${kind}, 'tron:mainnet', ${"aa".repeat(32)}, -1, ${ii}, '{}'::jsonb,
      'pending', now(), now())
    ON CONFLICT (subscription_id, kind, chain_id, tx_id, log_index, internal_index) DO NOTHING RETURNING id`;
  expect(await insert("evt_01JNEWAAAAAAAAAAAAAAAAAAAA", "wallet.transfer.confirmed", -1)).toHaveLength(1);
  expect(await insert("evt_01JNEWBBBBBBBBBBBBBBBBBBBB", "wallet.transfer.broadcasted", 1)).toHaveLength(1);
  // The old broadcasted event's identity still holds.
  expect(await insert("evt_01JNEWCCCCCCCCCCCCCCCCCCCC", "wallet.transfer.broadcasted", -1)).toHaveLength(0);
}, 60_000);
