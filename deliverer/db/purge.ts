// Purge: deleting events with everything that hangs off them (delivery state, attempts, search refs), for a worker's
// deleted events and, in batches, for the subscriptions whose events were asked to go (deliverer/jobs/event-purge.ts).
import { eq } from "drizzle-orm";
import { withDatabase } from "../../common/db.ts";
import { sqlFile } from "../../common/sql-file.ts";
import { eventPurges, type EventStatus } from "../schema.ts";
import { windowBounds } from "./bounds.ts";
import type { DelivererDb } from "./connection.ts";

/** The events of ids $1 (a JSON array) created in [$2, $3], as deleteBatch needs them. */
const EVENTS_BY_IDS_SQL = sqlFile(new URL("./purge-by-ids.sql", import.meta.url));
/** A subscription's ($1) newest $2 events, as deleteBatch needs them. */
const EVENTS_OF_SUBSCRIPTION_SQL = sqlFile(new URL("./purge-of-subscription.sql", import.meta.url));
/**
 * Deletes events $1 (JSON array) created in [$2, $3] with their state, attempts, address rows (keys $4, addresses $5)
 * and txId rows (txIds $6); answers each deleted event's id and status.
 */
const DELETE_EVENTS_SQL = sqlFile(new URL("./purge-delete.sql", import.meta.url));

/** What deleting an event needs to know of it (its partition, its address rows and its txId row). */
interface Doomed {
  id: string;
  created_at: Date | string;
  key_id: string | null;
  addresses: string[];
  tx_id: string | null;
}

/** Deletes events with their delivery state, attempts, address rows and txId rows. */
export async function deleteEvents(db: DelivererDb, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  const [from, to] = windowBounds(ids);
  const rows = (await db.$client.unsafe(EVENTS_BY_IDS_SQL, [JSON.stringify(ids), from, to])) as Doomed[];
  await deleteBatch(db, rows);
}

/**
 * Deletes the given events with their delivery state, attempts, address rows and txId rows in one statement. Every condition is an array
 * or a range on an index's leading columns (never a join the planner could turn into a scan of a key's rows).
 */
async function deleteBatch(db: DelivererDb, rows: Doomed[]): Promise<{ id: string; status: EventStatus }[]> {
  if (rows.length === 0) return [];
  const times = rows.map((r) => new Date(r.created_at).getTime());
  const from = new Date(Math.min(...times)).toISOString();
  const to = new Date(Math.max(...times)).toISOString();
  const ids = JSON.stringify(rows.map((r) => r.id));
  const keys = [...new Set(rows.map((r) => r.key_id).filter((k): k is string => k !== null))];
  const addrs = JSON.stringify([...new Set(rows.flatMap((r) => r.addresses))]);
  const txs = JSON.stringify([...new Set(rows.map((r) => r.tx_id).filter((t): t is string => t !== null))]);
  return (await db.$client.unsafe(DELETE_EVENTS_SQL, [ids, from, to, JSON.stringify(keys), addrs, txs])) as { id: string; status: EventStatus }[];
}

/**
 * Marks a subscription's events for deletion: they leave GET /v1/events at once and the purge loop
 * (deliverer/jobs/event-purge.ts) deletes them in batches. Idempotent.
 */
export async function requestPurge(db: DelivererDb, subscriptionId: string): Promise<void> {
  await withDatabase(() =>
    db.insert(eventPurges).values({ subscriptionId, requestedAt: new Date() }).onConflictDoNothing(),
  );
}

/** Subscriptions whose events are waiting to be purged, oldest request first. */
export async function purgeRequests(db: DelivererDb, limit: number): Promise<string[]> {
  const rows = await db
    .select({ id: eventPurges.subscriptionId })
    .from(eventPurges)
    .orderBy(eventPurges.requestedAt)
    .limit(limit);
  return rows.map((r) => r.id);
}

/**
 * Deletes one batch of a subscription's events (one short statement); when none is left the purge request goes.
 * Returns how many were deleted and the ids that were pending (to drop from the schedule).
 */
export async function purgeBatch(db: DelivererDb, subscriptionId: string, limit: number): Promise<{ deleted: number; pendingIds: string[] }> {
  // Newest first along events_subscription_page_idx: a batch is one slice of time, so its delete bounds are tight.
  const doomed = (await db.$client.unsafe(EVENTS_OF_SUBSCRIPTION_SQL, [subscriptionId, limit])) as Doomed[];
  const rows = await deleteBatch(db, doomed);
  if (doomed.length < limit) await db.delete(eventPurges).where(eq(eventPurges.subscriptionId, subscriptionId));
  return { deleted: rows.length, pendingIds: rows.filter((r) => r.status === "pending").map((r) => r.id) };
}
