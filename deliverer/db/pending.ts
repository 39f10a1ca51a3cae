// Pending events as the schedule pages through them: its rebuild (in id order) and its reconciliation (by due time).
import { sqlFile } from "../../common/sql-file.ts";
import type { DelivererDb } from "./connection.ts";
import type { OverdueCursor } from "./types.ts";

/** Pending, not held events after id $1, at most $2. */
const PENDING_PAGE_SQL = sqlFile(new URL("./pending-page.sql", import.meta.url));
/** Pending, not held events due in [$1, $2), keyset after ($1, id $3), at most $4. */
const OVERDUE_PAGE_SQL = sqlFile(new URL("./overdue-page.sql", import.meta.url));

/** Pending, not held events in id order after `afterId` (the schedule rebuild pages through them). */
export async function pendingPage(db: DelivererDb, afterId: string, limit: number): Promise<{ id: string; dueMs: number }[]> {
  const rows = (await db.$client.unsafe(PENDING_PAGE_SQL, [afterId, limit])) as { id: string; next_attempt_at: Date | string | null }[];
  return rows.map((r) => ({ id: r.id, dueMs: r.next_attempt_at ? new Date(r.next_attempt_at).getTime() : Date.now() }));
}

/**
 * Pending, not held events due before `before`, oldest first, keyset on (next_attempt_at, id) after `after`: the
 * schedule reconciliation's pages. Served by event_deliveries_pending_idx (a range on next_attempt_at; ties on one
 * timestamp, a whole Enqueue batch, are ordered by an incremental sort of that range).
 */
export async function overduePage(db: DelivererDb, before: Date, after: OverdueCursor | null, limit: number): Promise<OverdueCursor[]> {
  // Spelled as a range plus a tie-break (not a row comparison) so both bounds are index conditions.
  const from = after ? new Date(after.dueMs).toISOString() : "-infinity";
  const rows = (await db.$client.unsafe(OVERDUE_PAGE_SQL, [from, before.toISOString(), after?.id ?? "", limit])) as { id: string; next_attempt_at: Date | string }[];
  return rows.map((r) => ({ id: r.id, dueMs: new Date(r.next_attempt_at).getTime() }));
}
