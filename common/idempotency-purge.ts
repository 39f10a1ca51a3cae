// Expired idempotency records (24 h) purged in the background, the same job in every service that keeps them.
import type { Job } from "./jobs.ts";
import type { Logger } from "./logger.ts";

export function idempotencyPurgeJob(store: { purgeExpiredIdempotency(): Promise<number> }, log: Logger): Job {
  return {
    name: "idempotency purge",
    everyMs: 10 * 60_000,
    async run() {
      const n = await store.purgeExpiredIdempotency();
      if (n > 0) log.info("purged expired idempotency records", { count: n });
    },
  };
}
