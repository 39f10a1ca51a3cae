// Enqueue: new events written with their delivery state and search refs, a matcher's batch in one statement
// (enqueue-transfers.sql), a test event on the caller's transaction.
import { eq, sql } from "drizzle-orm";
import { withDatabase } from "../../common/db.ts";
import { sqlFile } from "../../common/sql-file.ts";
import { eventAddresses, eventDeliveries, events, eventTxRefs, type EventRow, type NewEventRow } from "../schema.ts";
import { stateColumns } from "./bounds.ts";
import type { DelivererDb, Executor } from "./connection.ts";

/** New transfer events with their delivery state and refs, for the rows whose identity is new ($1: a JSON array). */
const ENQUEUE_TRANSFERS_SQL = sqlFile(new URL("./enqueue-transfers.sql", import.meta.url));
/** The stored event id of each of the rows' identities ($1: the rows as a JSON array). */
const EXISTING_TRANSFERS_SQL = sqlFile(new URL("./enqueue-existing.sql", import.meta.url));

/**
 * The identity of a chain event: one per (subscription, kind, chain, transaction, log index, internal index). An
 * activity's internal index is -1; its kind names its family, so two families of one transaction stay apart.
 */
export function transferKey(
  subscriptionId: string,
  kind: string,
  chainId: string,
  txId: string,
  logIndex: number,
  internalIndex: number,
): string {
  return `${subscriptionId}|${kind}|${chainId}|${txId}|${logIndex}|${internalIndex}`;
}

/**
 * Inserts chain events (transfers and activity) in one statement; an event whose (subscription, kind, chain, txId, logIndex,
 * internalIndex) exists already is not inserted. Returns the ids actually inserted and, for every key, the id now stored for it.
 */
export async function insertTransferEvents(db: DelivererDb, rows: NewEventRow[]): Promise<{ inserted: Set<string>; idByKey: Map<string, string> }> {
  const inserted = new Set<string>();
  const idByKey = new Map<string, string>();
  if (rows.length === 0) return { inserted, idByKey };
  const json = JSON.stringify(
    rows.map((r) => ({
      id: r.id,
      sub: r.subscriptionId,
      key: r.keyId ?? null,
      kind: r.kind,
      chain: r.chainId,
      tx: r.txId,
      li: r.logIndex,
      addrs: r.addresses ?? [],
      ii: r.internalIndex ?? -1,
      payload: r.payload,
      next: r.nextAttemptAt?.toISOString() ?? null,
      held: r.held ?? false,
      hr: r.held ? (r.heldReason ?? null) : null,
      at: (r.createdAt ?? new Date()).toISOString(),
    })),
  );
  await withDatabase(async () => {
    // The identity first (event_transfer_keys, schema.ts): only the rows whose identity is new become events, with
    // their delivery state and address rows, all in one statement.
    const done = (await db.$client.unsafe(ENQUEUE_TRANSFERS_SQL, [json])) as { id: string }[];
    for (const r of done) inserted.add(r.id);
    if (inserted.size === rows.length) {
      for (const r of rows) {
        idByKey.set(transferKey(r.subscriptionId, r.kind, r.chainId!, r.txId!, r.logIndex!, r.internalIndex ?? -1), r.id!);
      }
      return;
    }
    // Some already existed (a block read again): the stored id of every key.
    const existing = (await db.$client.unsafe(EXISTING_TRANSFERS_SQL, [json])) as {
      id: string;
      subscription_id: string;
      kind: string;
      chain_id: string;
      tx_id: string;
      log_index: number;
      internal_index: number;
    }[];
    for (const e of existing) {
      idByKey.set(transferKey(e.subscription_id, e.kind, e.chain_id, e.tx_id, e.log_index, e.internal_index), e.id);
    }
  });
  return { inserted, idByKey };
}

/** One event (a test event), its delivery state and its address rows, on the caller's transaction. */
export async function insertEvent(ex: Executor, row: NewEventRow): Promise<EventRow> {
  const { status, nextAttemptAt, held, heldReason, trigger, updatedAt, ...event } = row;
  // The event and its state in one statement, as Enqueue writes them.
  const e = ex.$with("e").as(ex.insert(events).values(event).returning());
  const state = ex.$with("s").as(
    ex
      .insert(eventDeliveries)
      .select(
        ex
          .select({
            eventId: e.id,
            createdAt: e.createdAt,
            subscriptionId: e.subscriptionId,
            keyId: e.keyId,
            status: sql`${status}::text`.as("status"),
            attempts: sql`0`.as("attempts"),
            cycle: sql`0`.as("cycle"),
            deliveryCount: sql`0`.as("delivery_count"),
            responseStatus: sql`NULL::int`.as("response_status"),
            responseBody: sql`NULL::text`.as("response_body"),
            nextAttemptAt: sql`${nextAttemptAt?.toISOString() ?? null}::timestamptz`.as("next_attempt_at"),
            held: sql`${held ?? false}::boolean`.as("held"),
            heldReason: sql`${held ? (heldReason ?? null) : null}::text`.as("held_reason"),
            trigger: sql`${trigger ?? "automatic"}::text`.as("trigger"),
            updatedAt: sql`${updatedAt.toISOString()}::timestamptz`.as("updated_at"),
          })
          .from(e),
      )
      .returning({ eventId: eventDeliveries.eventId, ...stateColumns }),
  );
  const [joined] = await ex.with(e, state).select().from(e).innerJoin(state, eq(state.eventId, e.id));
  const { eventId: _id, ...rest } = joined!.s;
  const out = { ...joined!.e, ...rest };
  if (out.keyId && out.addresses.length > 0) {
    await ex.insert(eventAddresses).values(
      out.addresses.map((address) => ({ keyId: out.keyId!, address, createdAt: out.createdAt, eventId: out.id })),
    );
  }
  if (out.keyId && out.txId) {
    await ex.insert(eventTxRefs).values({ keyId: out.keyId, txId: out.txId, createdAt: out.createdAt, eventId: out.id });
  }
  return out;
}
