// Held events (disabled subscription, revoked key, …) are checked page by page: those whose subscription is active
// again go back into the schedule, a deleted subscription's are purged, and those staying held show their current
// reason. The worker runs one check at a time (HeldEvents.check joins one running) on its job runner.
import type { Job } from "../../common/jobs.ts";
import { HOLD_REASONS, type HoldReason } from "../../common/hold-reasons.ts";
import type { Schedule } from "../schedule.ts";
import type { DelivererStore } from "../db/store.ts";
import { holdReason, type TargetCache } from "../targets.ts";
import { heldSubscriptions } from "../metrics.ts";
import { EVENT_PAGE, HELD_PAGE } from "../worker/defaults.ts";

export const HELD_RESUME_JOB = "held check";

/** Runs `check` (the worker's resumeHeld()) every `everyMs`, first after one interval. */
export function heldResumeJob(check: () => Promise<void>, everyMs: number): Job {
  return { name: HELD_RESUME_JOB, everyMs, firstAfterMs: everyMs, run: check };
}

export class HeldEvents {
  /** The hold reason last written for each subscription with held events. */
  private readonly heldReasons = new Map<string, HoldReason>();
  private running: Promise<number> | undefined;

  constructor(
    private readonly store: DelivererStore,
    private readonly schedule: Schedule,
    private readonly targets: TargetCache,
    /** Resumed events are reserved for a lease's length while they move back into the schedule. */
    private readonly leaseMs: number,
  ) {}

  /** One check (a check still running is joined); returns how many events went back to the schedule. */
  check(): Promise<number> {
    this.running ??= this.checkAll().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async checkAll(): Promise<number> {
    let after = "";
    let released = 0;
    const seen = new Set<string>();
    const heldCounts = new Map<HoldReason, number>(HOLD_REASONS.map((r) => [r, 0]));
    for (;;) {
      const subs = await this.store.heldSubscriptions(after, HELD_PAGE);
      if (subs.length === 0) break;
      for (const id of subs) seen.add(id);
      released += await this.resumeHeldOf(subs, heldCounts);
      if (subs.length < HELD_PAGE) break;
      after = subs[subs.length - 1]!;
    }
    for (const id of this.heldReasons.keys()) if (!seen.has(id)) this.heldReasons.delete(id);
    for (const [reason, n] of heldCounts) heldSubscriptions.set({ reason }, n);
    return released;
  }

  /** Resumes the held events of those of `subs` that are active again; returns how many went back to the schedule. */
  private async resumeHeldOf(subs: string[], heldCounts: Map<HoldReason, number>): Promise<number> {
    const targets = await this.targets.get(subs, true);
    const active: string[] = [];
    const stillHeld = new Map<HoldReason, string[]>(HOLD_REASONS.map((r) => [r, []]));
    for (const id of subs) {
      const t = targets.get(id);
      const reason = t?.exists ? holdReason(t) : undefined;
      if (!t || !t.exists) await this.store.requestPurge(id);
      else if (reason) stillHeld.get(reason)!.push(id);
      else active.push(id);
    }
    // Those staying held show their current reason (it may have changed while they were held), rewritten only when
    // it differs from the last written: a subscription may hold many events.
    for (const [reason, ids] of stillHeld) {
      heldCounts.set(reason, heldCounts.get(reason)! + ids.length);
      const changed = ids.filter((id) => this.heldReasons.get(id) !== reason);
      await this.store.setHeldReason(changed, reason);
      for (const id of changed) this.heldReasons.set(id, reason);
    }
    let count = 0;
    if (active.length === 0) return count;
    for (;;) {
      const ids = await this.store.heldEventIds(active, EVENT_PAGE);
      if (ids.length === 0) break;
      const now = Date.now();
      await this.schedule.reserve(ids, now + this.leaseMs);
      const released = await this.store.unhold(ids, new Date(now));
      await this.schedule.moveToDue(released.map((id) => ({ id, dueMs: now })));
      count += released.length;
      if (ids.length < EVENT_PAGE) break;
    }
    return count;
  }
}
