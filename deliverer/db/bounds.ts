// Conditions and column sets the deliverer's statements share: an event joined to its delivery state, keyset pages
// on (time, id), and the partition window of a list of event ids (their ULID times).
import { and, between, eq, getTableColumns, inArray, lt, lte, or, type SQL, type SQLWrapper } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";
import { eventTimeWindow } from "../partitions.ts";
import { eventDeliveries, events } from "../schema.ts";
import type { PageCursor } from "./types.ts";

/**
 * Keyset page of a newest-first list on (time, id): the rows strictly before the cursor. `time <= t` stands on its
 * own so it is an index bound (and prunes the partitions newer than the cursor); the OR only breaks ties.
 */
export function beforeCursor(time: PgColumn, id: PgColumn, after: PageCursor): SQL {
  return keysetBefore(time, id, new Date(after.t), after.id);
}

/** beforeCursor's condition on the cursor's time and id, given as values or as bound names (pageBounds). */
export function keysetBefore(time: PgColumn, id: PgColumn, t: Date | SQLWrapper, lastId: string | SQLWrapper): SQL {
  return and(lte(time, t), or(lt(time, t), lt(id, lastId)))!;
}

export const deliveries = eventDeliveries;

/**
 * An event's row to its delivery state: the same (id, created_at), so a bound on one table's created_at is written on
 * both (the planner carries an equality across a join, not a range) and each table prunes its own partitions.
 */
export const deliveryOfEvent = and(eq(deliveries.eventId, events.id), eq(deliveries.createdAt, events.createdAt))!;

/** The columns of an EventRow: the event's own and its delivery state. */
const { eventId: _eventId, createdAt: _createdAt, subscriptionId: _subscriptionId, keyId: _keyId, ...ownStateColumns } =
  getTableColumns(eventDeliveries);
export const stateColumns = ownStateColumns;
export const eventRowColumns = { ...getTableColumns(events), ...stateColumns };

/** created_at in [from, to] on both tables of the join. */
export function bothBetween(from: Date, to: Date): SQL {
  return and(between(events.createdAt, from, to), between(deliveries.createdAt, from, to))!;
}

/**
 * Events by id joined to their state (deliveryOfEvent): the id list, and created_at bounded on both tables by the ids'
 * ULID times so only their partitions are read.
 */
export function byIds(ids: string[]): SQL {
  const w = eventTimeWindow(ids);
  const inIds = ids.length === 1 ? eq(events.id, ids[0]!) : inArray(events.id, ids);
  return w ? and(inIds, bothBetween(w.from, w.to))! : inIds;
}

/** Delivery states by event id, bounded the same way (statements on event_deliveries alone). */
export function deliveriesByIds(ids: string[]): SQL {
  const w = eventTimeWindow(ids);
  const inIds = ids.length === 1 ? eq(deliveries.eventId, ids[0]!) : inArray(deliveries.eventId, ids);
  return w ? and(inIds, between(deliveries.createdAt, w.from, w.to))! : inIds;
}

/** The same bounds as ISO texts for hand-written statements (unbounded when an id carries no ULID time). */
export function windowBounds(ids: string[]): [string, string] {
  const w = eventTimeWindow(ids);
  return w ? [w.from.toISOString(), w.to.toISOString()] : ["-infinity", "infinity"];
}

