// Deleting a deleted subscription's events in the background: DeleteSubscriptionEvents records the request
// (event_purges) and returns at once, and this loop deletes the events with their attempts and address rows in
// short batches, each one statement, so a subscription with a million events never holds a long transaction or the
// API (README "Operations"). A restarted deliverer finds the requests still there and carries on.
import type { Logger } from "../common/logger.ts";
import type { Schedule } from "./schedule.ts";
import type { DelivererStore } from "./store.ts";

export interface PurgeOptions {
  /** Events deleted per statement. */
  batch: number;
  /** How often the requests are looked at without a wake-up (another replica may have recorded them). */
  intervalMs: number;
  /** A pause between two batches, so the purge leaves room for the API and the worker. */
  pauseMs: number;
}

export const DEFAULT_PURGE_OPTIONS: PurgeOptions = { batch: 2_000, intervalMs: 5_000, pauseMs: 5 };

export class EventPurger {
  private running = false;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private readonly o: PurgeOptions;

  constructor(
    private readonly store: DelivererStore,
    private readonly schedule: Schedule,
    private readonly logger: Logger,
    opts: Partial<PurgeOptions> = {},
  ) {
    this.o = { ...DEFAULT_PURGE_OPTIONS, ...opts };
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  wake(): void {
    this.wakeUp?.();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake();
    await this.loop;
  }

  /** Purges every recorded request to the end; returns the events deleted. */
  async pass(): Promise<number> {
    let total = 0;
    for (const subscriptionId of await this.store.purgeRequests(100)) {
      for (;;) {
        const { deleted, pendingIds } = await this.store.purgeBatch(subscriptionId, this.o.batch);
        total += deleted;
        // A schedule entry left behind is dropped when it is claimed and its event is not found.
        if (pendingIds.length > 0) await this.schedule.remove(pendingIds).catch(() => {});
        if (deleted < this.o.batch || !this.running) break;
        await Bun.sleep(this.o.pauseMs);
      }
      if (!this.running) break;
    }
    return total;
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        const n = await this.pass();
        if (n > 0) this.logger.info("events of deleted subscriptions purged", { deleted: n });
      } catch (err) {
        this.logger.warn("event purge failed; it is retried", { err });
      }
      if (!this.running) break;
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, this.o.intervalMs);
        this.wakeUp = done;
        function done() {
          clearTimeout(t);
          resolve();
        }
      });
      this.wakeUp = undefined;
    }
  }
}
