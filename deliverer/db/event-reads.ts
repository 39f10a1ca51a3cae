// Event reads: one event, a subscription's events, an event's attempts, and the lock and restart of a manual retry.
import { and, desc, eq, sql } from "drizzle-orm";
import { withDatabase } from "../../common/db.ts";
import type { EventViewRow } from "../payload.ts";
import { attempts, eventDeliveries, events, type AttemptRow, type EventRow, type EventStatus } from "../schema.ts";
import { beforeCursor, byIds, deliveries, deliveryOfEvent, eventRowColumns, stateColumns } from "./bounds.ts";
import type { DelivererDb, DelivererTx } from "./connection.ts";
import type { EventPages } from "./event-pages.ts";
import type { PageCursor } from "./types.ts";

export function getEvent(pages: EventPages, subscriptionId: string, eventId: string): Promise<EventViewRow | undefined> {
  return withDatabase(async () => {
    const [row] = await pages.eventsById([eventId], { subscriptionId }).execute();
    return row;
  });
}

export async function lockEvent(tx: DelivererTx, subscriptionId: string, eventId: string): Promise<EventRow | undefined> {
  // The delivery state is what a retry changes: its row is the one locked, named in FOR UPDATE OF, hence a plain join
  // here (one event by id: a nested loop of two key probes) rather than the LATERAL probe of the other reads.
  const [row] = await tx
    .select(eventRowColumns)
    .from(events)
    .innerJoin(deliveries, deliveryOfEvent)
    .where(and(byIds([eventId]), eq(events.subscriptionId, subscriptionId)))
    .for("update", { of: deliveries });
  return row;
}

/** Starts a manual cycle of a locked event (lockEvent); returns the event with its new state. */
export async function restartCycle(tx: DelivererTx, event: EventRow, at: Date): Promise<EventRow> {
  const [state] = await tx
    .update(eventDeliveries)
    .set({ status: "pending", attempts: 0, cycle: sql`${deliveries.cycle} + 1`, nextAttemptAt: at, held: false, trigger: "manual", updatedAt: new Date() })
    .where(and(eq(deliveries.eventId, event.id), eq(deliveries.createdAt, event.createdAt)))
    .returning(stateColumns);
  return { ...event, ...state! };
}

/** Newest first, keyset on (created_at, id); one extra row tells whether another page exists. */
export function listEvents(pages: EventPages, subscriptionId: string, status: EventStatus | undefined, limit: number, after: PageCursor | undefined): Promise<EventViewRow[]> {
  return withDatabase(() => {
    // With a status the page is a range of event_deliveries_subscription_status_page_idx, else of
    // events_subscription_page_idx (event-pages.ts pageQuery).
    return pages.pageQuery({ subscriptionId, status }, limit, after).execute();
  });
}

/** An event's attempts, newest first, keyset on (attempted_at, id); read from the event's partition only. */
export function listAttempts(db: DelivererDb, event: Pick<EventRow, "id" | "createdAt">, limit: number, after: PageCursor | undefined): Promise<AttemptRow[]> {
  return withDatabase(() => {
    const conds = [eq(attempts.eventId, event.id), eq(attempts.eventCreatedAt, event.createdAt)];
    if (after) conds.push(beforeCursor(attempts.attemptedAt, attempts.id, after));
    return db
      .select()
      .from(attempts)
      .where(and(...conds))
      .orderBy(desc(attempts.attemptedAt), desc(attempts.id))
      .limit(limit + 1);
  });
}
