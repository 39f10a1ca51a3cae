// Outcomes: a batch of attempt outcomes written in one statement (outcomes.sql).
import { pgText } from "../../common/db.ts";
import { sqlFile } from "../../common/sql-file.ts";
import { windowBounds } from "./bounds.ts";
import type { DelivererDb } from "./connection.ts";
import type { Outcome } from "./types.ts";

/**
 * A batch of attempt outcomes: each updates its event's delivery state and adds its attempt record, in one statement
 * (so one transaction): an attempt is recorded exactly when its outcome applied, with the trigger of the cycle it
 * belongs to. It applies only to the state its claim read: still pending, in the same cycle, with no attempt recorded
 * since. Only the narrow event_deliveries row changes; the event itself (payload, page indexes) is never
 * rewritten. The ids are also an array on the primary key's leading column: on a fresh partition without statistics
 * the join alone was planned as a nested loop over a sequential scan of the day's states (seconds per batch; the
 * narrow table looks cheap to scan). The batch comes as one array per field, unnested: PostgreSQL reads arrays far
 * faster than json_to_recordset takes the same fields by name (docs/adr/0006-every-attempt-recorded.md).
 */
const OUTCOMES_SQL = sqlFile(new URL("./outcomes.sql", import.meta.url));

/** Writes a batch of attempt outcomes; returns the ids whose write applied (an event moved on elsewhere is skipped). */
export async function recordOutcomes(db: DelivererDb, outcomes: Outcome[]): Promise<Set<string>> {
  if (outcomes.length === 0) return new Set();
  const ids = outcomes.map((o) => o.id);
  const [from, to] = windowBounds(ids);
  const rows = (await db.$client.unsafe(OUTCOMES_SQL, [
    ids,
    outcomes.map((o) => o.prevAttempts),
    outcomes.map((o) => o.status),
    outcomes.map((o) => o.attempts),
    outcomes.map((o) => (o.delivered ? 1 : 0)),
    outcomes.map((o) => o.responseStatus),
    outcomes.map((o) => pgText(o.responseBody)),
    outcomes.map((o) => (o.nextAttemptAt ? o.nextAttemptAt.toISOString() : null)),
    outcomes.map((o) => o.attempt.id),
    outcomes.map((o) => o.attempt.at.toISOString()),
    outcomes.map((o) => o.attempt.durationMs),
    outcomes.map((o) => pgText(o.attempt.error)),
    outcomes.map((o) => pgText(o.attempt.responseBody)),
    from,
    to,
    outcomes.map((o) => o.cycle),
  ])) as { id: string }[];
  return new Set(rows.map((r) => r.id));
}
