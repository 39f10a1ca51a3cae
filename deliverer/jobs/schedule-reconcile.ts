// Puts back schedule entries that Redis lost one by one while the schedule's built marker survived (maxmemory
// eviction, a shard key deleted by hand, a bug). The rebuild only notices a schedule lost whole; without this pass
// such an event would stay pending in PostgreSQL, never attempted. Each pass reads a bounded slice of the overdue
// pending events (an index range, continued from where the previous pass stopped, so a large backlog is covered
// over several passes rather than re-reading its head) and adds the ones that are in neither a due nor a lease set.
import type { Job } from "../../common/jobs.ts";
import type { Logger } from "../../common/logger.ts";
import { scheduleRepaired } from "../metrics.ts";
import type { Schedule } from "../schedule.ts";
import type { DelivererStore } from "../db/store.ts";

export interface ReconcileOptions {
  /** How often a pass runs (across replicas: the lock spans most of this). */
  intervalMs: number;
  /**
   * How overdue an event must be before its absence counts, and how far in the future its entry comes due when it
   * is put back: a lease's length. Reading only events overdue by that much keeps a pass to the ones that look stuck
   * (a healthy schedule claims an event soon after it comes due, and waits a lease before taking a claim back); the
   * delay is what rules out a second send (see reconcileSchedule).
   */
  graceMs: number;
  /** Most events read per pass. */
  limit: number;
}

export interface ReconcileResult {
  examined: number;
  repaired: number;
}

const PAGE = 1_000;
const LOCK = "reconcile";

/**
 * One pass; returns zeros without doing anything when another replica holds the lock or the schedule is not built
 * (the rebuild owns that case).
 *
 * Never a second send: an event being attempted holds a lease, and addMissing skips leased ids atomically. Enqueue,
 * a test event, a retry and a resumed hold all reserve (lease) ids before their rows commit, and the worker moves an
 * id between the two sets in one script, so a pending row in neither set is not one on its way into the schedule
 * (an extra add of one that is would do no harm: a sorted set holds an id once, and a claim re-reads the row). The
 * case left is a lease lost with its key while its attempt is still running: a put-back entry therefore comes due
 * `graceMs` (a lease's length) from now, by when that attempt has ended, the same wait after which an expired lease
 * is claimed again; that claim reads PostgreSQL and drops an event that got delivered meanwhile.
 */
export async function reconcileSchedule(
  store: DelivererStore,
  schedule: Schedule,
  o: ReconcileOptions,
  log: Logger,
): Promise<ReconcileResult> {
  // Not released at the end: held for most of the interval, so N replicas make one pass per interval between them.
  if (!(await schedule.tryLock(LOCK, Math.max(1, Math.floor(o.intervalMs * 0.9))))) return { examined: 0, repaired: 0 };
  if (!(await schedule.isBuilt())) return { examined: 0, repaired: 0 };
  const now = Date.now();
  const before = new Date(now - o.graceMs);
  let cursor = await schedule.reconcileCursor();
  let examined = 0;
  let repaired = 0;
  while (examined < o.limit) {
    const want = Math.min(PAGE, o.limit - examined);
    const page = await store.overduePage(before, cursor, want);
    examined += page.length;
    if (page.length > 0) {
      const added = await schedule.addMissing(page.map((e) => ({ id: e.id, dueMs: now + o.graceMs })));
      if (added > 0) {
        repaired += added;
        scheduleRepaired.inc(added);
      }
      cursor = page[page.length - 1]!;
    }
    // The end of the overdue range: the next pass starts again from the oldest.
    if (page.length < want) {
      cursor = null;
      break;
    }
  }
  await schedule.setReconcileCursor(cursor);
  if (repaired > 0) {
    log.warn("schedule entries were missing from Redis; put back from PostgreSQL", { repaired, examined, dueInMs: o.graceMs });
  }
  return { examined, repaired };
}

export const SCHEDULE_RECONCILE_JOB = "schedule reconciliation";

/** Runs `pass` (the worker's reconcile(), which joins a pass already running) every `everyMs`, first after one interval. */
export function scheduleReconcileJob(pass: () => Promise<unknown>, everyMs: number): Job {
  return { name: SCHEDULE_RECONCILE_JOB, everyMs, firstAfterMs: everyMs, run: () => pass().then(() => {}) };
}
