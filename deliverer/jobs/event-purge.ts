// Deleting a deleted subscription's events in the background: DeleteSubscriptionEvents records the request
// (event_purges) and wakes this job, which deletes the events with their attempts and address rows in short
// batches, each one statement, so a subscription with a million events never holds a long transaction or the API
// (docs/operations.md). A restarted deliverer finds the requests still there and carries on.
import type { Job } from "../../common/jobs.ts";
import type { Logger } from "../../common/logger.ts";
import type { Schedule } from "../schedule.ts";
import type { DelivererStore } from "../db/store.ts";

export interface PurgeOptions {
  /** Events deleted per statement. */
  batch: number;
  /** How often the requests are looked at without a wake-up (another replica may have recorded them). */
  intervalMs: number;
  /** A pause between two batches, so the purge leaves room for the API and the worker. */
  pauseMs: number;
}

export const DEFAULT_PURGE_OPTIONS: PurgeOptions = { batch: 2_000, intervalMs: 5_000, pauseMs: 5 };

export const EVENT_PURGE_JOB = "event purge";

export function eventPurgeJob(store: DelivererStore, schedule: Schedule, logger: Logger, opts: Partial<PurgeOptions> = {}): Job {
  const o = { ...DEFAULT_PURGE_OPTIONS, ...opts };
  return {
    name: EVENT_PURGE_JOB,
    everyMs: o.intervalMs,
    async run(signal) {
      let total = 0;
      for (const subscriptionId of await store.purgeRequests(100)) {
        for (;;) {
          const { deleted, pendingIds } = await store.purgeBatch(subscriptionId, o.batch);
          total += deleted;
          // A schedule entry left behind is dropped when it is claimed and its event is not found.
          if (pendingIds.length > 0) await schedule.remove(pendingIds).catch(() => {});
          if (deleted < o.batch || signal.aborted) break;
          await Bun.sleep(o.pauseMs);
        }
        if (signal.aborted) break;
      }
      if (total > 0) logger.info("events of deleted subscriptions purged", { deleted: total });
    },
  };
}
