// Recover: a subscription's events in one status over a time range, found in keyset batches and started on a new
// manual cycle.
import { and, desc, eq, gte, lt, sql } from "drizzle-orm";
import { withDatabase } from "../../common/db.ts";
import { eventDeliveries, type EventStatus } from "../schema.ts";
import { beforeCursor, deliveries, deliveriesByIds } from "./bounds.ts";
import type { DelivererDb } from "./connection.ts";
import type { PageCursor } from "./types.ts";

/** Up to `limit` ids of a subscription's events in `status` created in [since, until): one recover batch. */
export function recoverCandidates(
  db: DelivererDb,
  subscriptionId: string,
  status: EventStatus,
  since: Date,
  until: Date,
  after: PageCursor | undefined,
  limit: number,
): Promise<{ id: string; t: number }[]> {
  return withDatabase(async () => {
    // A keyset walk, not "whatever still matches": an event re-queued and delivered again meanwhile is not taken twice.
    const page = after ? beforeCursor(deliveries.createdAt, deliveries.eventId, after) : undefined;
    const rows = await db
      .select({ id: deliveries.eventId, createdAt: deliveries.createdAt })
      .from(deliveries)
      .where(
        and(
          eq(deliveries.subscriptionId, subscriptionId),
          eq(deliveries.status, status),
          gte(deliveries.createdAt, since),
          lt(deliveries.createdAt, until),
          page,
        ),
      )
      .orderBy(desc(deliveries.createdAt), desc(deliveries.eventId))
      .limit(limit);
    return rows.map((r) => ({ id: r.id, t: r.createdAt.getTime() }));
  });
}

/** Starts a manual cycle for those of `ids` still in `status`; returns the ids it applied to (one short statement). */
export function requeue(db: DelivererDb, ids: string[], status: EventStatus, at: Date): Promise<string[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return withDatabase(async () => {
    const rows = await db
      .update(eventDeliveries)
      .set({ status: "pending", attempts: 0, cycle: sql`${deliveries.cycle} + 1`, nextAttemptAt: at, held: false, trigger: "manual", updatedAt: new Date() })
      .where(and(deliveriesByIds(ids), eq(deliveries.status, status)))
      .returning({ id: deliveries.eventId });
    return rows.map((r) => r.id);
  });
}
