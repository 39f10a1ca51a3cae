// Outbox rows written in the change's own transaction, so one exists exactly when the change committed (README.md).
import { sql } from "drizzle-orm";
import { TRON_CHAINS } from "../../common/contract/index.ts";
import type { RegistryExecutor } from "../db/connection.ts";

/** One change the index must learn. Meta, drop and key changes concern every chain; address changes one. */
export type IndexChange =
  | { kind: "addresses"; subscriptionId: string; chainId: string; add: readonly string[]; remove: readonly string[] }
  | { kind: "meta"; subscriptionId: string }
  | { kind: "drop"; subscriptionId: string }
  | { kind: "key"; keyId: string };

/** The address arrays of one outbox row. */
export interface AddressPayload {
  add: readonly string[];
  remove: readonly string[];
}

/** The outbox rows a committed change left: what a request waits on before it answers. */
export interface OutboxTicket {
  ids: number[];
  chains: string[];
  /**
   * The address arrays of its "addresses" rows by id, as the writer had them: the applier of this process uses them
   * instead of reading 10,000-entry arrays back from PostgreSQL (the rows hold the same values).
   */
  payloads?: Map<number, AddressPayload>;
}

export const NO_TICKET: OutboxTicket = { ids: [], chains: [] };

export function pgTextArray(values: readonly string[]): string {
  // Only validated values (chain ids, base58 addresses, ids) ever go through here: no quoting needed.
  return `{${values.join(",")}}`;
}

interface OutboxRowInit {
  chainId: string;
  kind: string;
  subscriptionId: string | null;
  keyId: string | null;
  add: readonly string[];
  remove: readonly string[];
}

function rowsOf(change: IndexChange, chains: readonly string[]): OutboxRowInit[] {
  switch (change.kind) {
    case "addresses":
      return [{ chainId: change.chainId, kind: "addresses", subscriptionId: change.subscriptionId, keyId: null, add: change.add, remove: change.remove }];
    case "meta":
    case "drop":
      return chains.map((chainId) => ({ chainId, kind: change.kind, subscriptionId: change.subscriptionId, keyId: null, add: [], remove: [] }));
    case "key":
      return chains.map((chainId) => ({ chainId, kind: "key", subscriptionId: null, keyId: change.keyId, add: [], remove: [] }));
  }
}

/**
 * Inserts the outbox rows of `changes` inside the caller's transaction (which must hold the row lock of every
 * subscription it names: README.md "Outbox"). One statement for all rows; an address change of 10,000 entries is one row
 * whose arrays travel as one parameter each.
 */
export async function recordIndexChanges(tx: RegistryExecutor, changes: readonly IndexChange[], chains: readonly string[] = TRON_CHAINS): Promise<OutboxTicket> {
  const rows = changes.flatMap((c) => rowsOf(c, chains));
  const perChain = rows.filter((r) => r.kind === "addresses").map((r) => r.chainId);
  if (new Set(perChain).size !== perChain.length) throw new Error("recordIndexChanges: one address change per chain and call");
  if (rows.length === 0) return NO_TICKET;
  const values = sql.join(
    rows.map(
      (r) =>
        sql`(${r.chainId}, ${r.kind}, ${r.subscriptionId}, ${r.keyId}, ${pgTextArray(r.add)}::text[], ${pgTextArray(r.remove)}::text[])`,
    ),
    sql`, `,
  );
  const inserted = (await tx.execute(
    sql`INSERT INTO watch_outbox (chain_id, kind, subscription_id, key_id, "add", "remove") VALUES ${values} RETURNING id, chain_id AS "chainId", kind`,
  )) as unknown as { id: number | string; chainId: string; kind: string }[];
  // At most one "addresses" row per chain in one call: the chain names the row's payload.
  const payloads = new Map<number, AddressPayload>();
  for (const r of inserted) {
    if (r.kind !== "addresses") continue;
    const row = rows.find((x) => x.kind === "addresses" && x.chainId === r.chainId)!;
    payloads.set(Number(r.id), { add: row.add, remove: row.remove });
  }
  return { ids: inserted.map((r) => Number(r.id)), chains: [...new Set(rows.map((r) => r.chainId))], payloads };
}

/** Which of `ids` are still in the outbox (not applied yet). */
export async function rowsLeft(ex: RegistryExecutor, ids: readonly number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const left = (await ex.execute(
    sql`SELECT id FROM watch_outbox WHERE id = ANY(${pgTextArray(ids.map(String))}::bigint[]) AND applied_position IS NULL`,
  )) as unknown as { id: number | string }[];
  return new Set(left.map((r) => Number(r.id)));
}
