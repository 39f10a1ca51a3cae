// Claims: the rows a worker claimed (their ids come from the schedule), read in one round trip.
import { sqlFile } from "../../common/sql-file.ts";
import type { EventStatus } from "../schema.ts";
import { windowBounds } from "./bounds.ts";
import type { DelivererDb } from "./connection.ts";
import type { ClaimedEvent } from "./types.ts";

/**
 * The claimed rows with their states: $1 the ids as a JSON array, $2 and $3 the ids' window of times (so only their
 * days' partitions are read). The state comes through a LATERAL probe (see event-pages.ts pageQuery): on a fresh partition, before
 * statistics, a plain join was planned as a scan of every state of the day against the id list (over a second per
 * claim batch). The ids are one array on the primary key (id, created_at): as `id IN (SELECT …)` the generic plan
 * read every event between the batch's first and last times and hash-joined them to the ids, in a catch-up
 * 2,700–4,700 rows for a claim of 140–450 (auto_explain in bench/matcher.ts: 70–160 ms a claim, and the deliveries
 * of the head-stream catch-up 785–1,602/s against 2,513–3,004/s after).
 */
export const CLAIMED_ROWS_SQL = sqlFile(new URL("./claims.sql", import.meta.url));

/** The claimed rows, in one round trip (the hot path: raw SQL, no query building). */
export async function loadClaimed(db: DelivererDb, ids: string[]): Promise<ClaimedEvent[]> {
  if (ids.length === 0) return [];
  const [from, to] = windowBounds(ids);
  const rows = (await db.$client.unsafe(CLAIMED_ROWS_SQL, [JSON.stringify(ids), from, to])) as {
    id: string;
    subscription_id: string;
    status: EventStatus;
    attempts: number;
    cycle: number;
    held: boolean;
    next_attempt_at: Date | null;
    payload: string;
  }[];
  return rows.map((r) => ({
    id: r.id,
    subscriptionId: r.subscription_id,
    status: r.status,
    attempts: r.attempts,
    cycle: r.cycle,
    held: r.held,
    nextAttemptAt: r.next_attempt_at ? new Date(r.next_attempt_at) : null,
    payload: r.payload,
  }));
}
