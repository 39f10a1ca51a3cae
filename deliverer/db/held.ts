// Held events: pending events out of the schedule for a reason (common/hold-reasons.ts) until they are released.
import { and, eq, inArray, sql } from "drizzle-orm";
import type { HoldReason } from "../../common/hold-reasons.ts";
import { sqlFile } from "../../common/sql-file.ts";
import { eventDeliveries } from "../schema.ts";
import { deliveries, deliveriesByIds } from "./bounds.ts";
import type { DelivererDb } from "./connection.ts";

/** Subscriptions with held events after $1, at most $2 (heldSubscriptions). */
const HELD_SUBSCRIPTIONS_SQL = sqlFile(new URL("./held-subscriptions.sql", import.meta.url));

/** Holds pending events for `reason` (common/hold-reasons.ts): out of the schedule until resumeHeld releases them. */
export async function markHeld(db: DelivererDb, ids: string[], reason: HoldReason): Promise<void> {
  if (ids.length === 0) return;
  await db
    .update(eventDeliveries)
    .set({ held: true, heldReason: reason, updatedAt: new Date() })
    .where(and(deliveriesByIds(ids), eq(deliveries.status, "pending")));
}

/**
 * The reason of the subscriptions' held events, where it changed (a disabled subscription's secret found unreadable,
 * or rows held before reasons were kept); returns how many rows changed.
 */
export async function setHeldReason(db: DelivererDb, subscriptionIds: string[], reason: HoldReason): Promise<number> {
  if (subscriptionIds.length === 0) return 0;
  const rows = await db
    .update(eventDeliveries)
    .set({ heldReason: reason })
    // Literals for the state, as in heldEventIds, so the partial index event_deliveries_held_idx applies.
    .where(
      and(
        inArray(deliveries.subscriptionId, subscriptionIds),
        sql`${deliveries.status} = 'pending' AND ${deliveries.held}`,
        sql`${deliveries.heldReason} IS DISTINCT FROM ${reason}`,
      ),
    )
    .returning({ id: deliveries.eventId });
  return rows.length;
}

/**
 * Subscriptions that have held events, in id order after `after` (the held check pages through all of them: with
 * one page only, subscriptions that stay held, such as a revoked key's, hid every one after them). A skip scan of
 * event_deliveries_held_idx: one probe per subscription, never every held event of one.
 */
export async function heldSubscriptions(db: DelivererDb, after: string, limit: number): Promise<string[]> {
  const rows = (await db.$client.unsafe(HELD_SUBSCRIPTIONS_SQL, [after, limit])) as { subscription_id: string }[];
  return rows.map((r) => r.subscription_id);
}

export async function heldEventIds(db: DelivererDb, subscriptionIds: string[], limit: number): Promise<string[]> {
  if (subscriptionIds.length === 0) return [];
  const rows = await db
    .select({ id: deliveries.eventId })
    .from(deliveries)
    // The state as literals, not parameters: on its generic plan (GENERIC_PLANS) only they match the partial
    // index event_deliveries_held_idx.
    .where(and(inArray(deliveries.subscriptionId, subscriptionIds), sql`${deliveries.status} = 'pending' AND ${deliveries.held}`))
    .limit(limit);
  return rows.map((r) => r.id);
}

/** Releases held events to be attempted at `at`; returns the ids released. */
export async function unhold(db: DelivererDb, ids: string[], at: Date): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .update(eventDeliveries)
    .set({ held: false, heldReason: null, nextAttemptAt: at, updatedAt: new Date() })
    .where(and(deliveriesByIds(ids), eq(deliveries.status, "pending"), eq(deliveries.held, true)))
    .returning({ id: deliveries.eventId });
  return rows.map((r) => r.id);
}
