// Outcomes written behind the attempts, in batches: one statement carries many events' outcomes, then the schedule
// is updated (finished events removed, retries due again). Until its outcome is written an event's lease is kept
// alive, and a claim of this process leaves it alone.
import type { Logger } from "../../common/logger.ts";
import type { Schedule, ScheduleEntry } from "../schedule.ts";
import type { DelivererStore } from "../db/store.ts";
import type { Outcome } from "../db/types.ts";
import { eventsFinished } from "../metrics.ts";
import type { ResolvedOptions } from "./defaults.ts";

type FlushOptions = Pick<ResolvedOptions, "flushSize" | "flushMs" | "flushConcurrency" | "flushMax">;

export class OutcomeWriter {
  private pending: Outcome[] = [];
  /**
   * Events whose attempt ended here and whose outcome is not written yet (buffered or being written), with when their
   * lease ends. Until the outcome is written, PostgreSQL still shows the attempt count the event had before, so a
   * claim of the same event would pass every other check and send it again: the lease is kept alive meanwhile
   * (keepLeases), and a claim of this process leaves such an event alone.
   */
  private readonly recording = new Map<string, number>();
  /**
   * Events of `recording` that a claim of this process took again (a retry or recover put them back in the schedule
   * while their old outcome waited): once that outcome is written, or found to belong to a cycle gone by, the claim
   * is released so the new cycle is attempted at once.
   */
  private readonly claimedAgain = new Set<string>();
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly writes = new Set<Promise<void>>();
  /** Outcomes were due to be written while every write slot was busy: the next write to end starts the next one. */
  private flushDue = false;
  // A timer of its own rather than a job: it lives exactly as long as unwritten outcomes can exist, until the last
  // write at stop, after the worker's jobs have ended.
  private leaseKeeper: ReturnType<typeof setInterval> | undefined;
  private extending = false;

  constructor(
    private readonly store: DelivererStore,
    private readonly schedule: Schedule,
    private readonly o: FlushOptions,
    private readonly leaseMs: number,
    private readonly log: Logger,
  ) {}

  /** Events whose outcome waits to be written. */
  get size(): number {
    return this.recording.size;
  }

  isRecording(id: string): boolean {
    return this.recording.has(id);
  }

  /** A claim of this process took an event whose outcome is still unwritten: released once it is written. */
  claimedWhileRecording(id: string): void {
    this.claimedAgain.add(id);
  }

  /** Buffers an outcome; a write starts at flushSize outcomes or after flushMs. */
  add(outcome: Outcome, leaseUntil: number): void {
    this.pending.push(outcome);
    this.recording.set(outcome.id, leaseUntil);
    if (this.pending.length >= this.o.flushSize) void this.flush();
    else this.flushTimer ??= setTimeout(() => void this.flush(), this.o.flushMs);
  }

  /** Keeps leases alive, checked twice within `marginMs` (what an outcome has left of its lease at the latest). */
  start(marginMs: number): void {
    this.leaseKeeper ??= setInterval(() => void this.keepLeases(), Math.max(10, Math.floor(marginMs / 2)));
  }

  /** Writes every outcome buffered or being written, then stops keeping leases. */
  async stop(): Promise<void> {
    while (this.pending.length > 0 || this.writes.size > 0) {
      await this.flush();
      await this.written();
    }
    clearInterval(this.leaseKeeper);
    this.leaseKeeper = undefined;
  }

  /**
   * Writes buffered outcomes in one statement, then updates the schedule. Up to `flushConcurrency` writes run at
   * once (one by default); while all are busy, outcomes keep collecting and the next write to finish takes them as
   * one bigger batch (up to `flushMax`), so the statement count falls as the delivery rate rises. Writes never share
   * an event: an event has one attempt in flight in this process, and it is only claimed again after its write.
   */
  private flush(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.pending.length === 0) return this.written();
    if (this.writes.size >= this.o.flushConcurrency) {
      this.flushDue = true;
      return this.written();
    }
    this.flushDue = false;
    const batch = this.pending.splice(0, this.o.flushMax);
    const write: Promise<void> = this.write(batch).finally(() => {
      this.writes.delete(write);
      if (this.pending.length === 0) return;
      if (this.flushDue || this.pending.length >= this.o.flushSize) void this.flush();
      else this.flushTimer ??= setTimeout(() => void this.flush(), this.o.flushMs);
    });
    this.writes.add(write);
    return write;
  }

  /** Resolves once the writes running now have ended. */
  private written(): Promise<void> {
    return Promise.all(this.writes).then(() => {});
  }

  private async write(batch: Outcome[]): Promise<void> {
    let applied: Set<string> | undefined;
    try {
      applied = await this.store.recordOutcomes(batch);
    } catch (err) {
      // Nothing is lost: the leases expire and the events are attempted again (at least once).
      this.log.error("recording delivery outcomes failed", { err, count: batch.length });
    }
    // Written (or given up): a claim may take these events again, and their leases are no longer kept alive.
    const again: ScheduleEntry[] = [];
    for (const outcome of batch) {
      this.recording.delete(outcome.id);
      if (this.claimedAgain.delete(outcome.id) && applied && !applied.has(outcome.id)) again.push({ id: outcome.id, dueMs: Date.now() });
    }
    if (!applied) return;
    try {
      const finished: string[] = [];
      for (const outcome of batch) {
        // Not applied: the event moved on elsewhere (deleted, or a retry started a new cycle). A claim of ours that
        // took it again meanwhile is released now (again); any other lease is not ours to move.
        if (!applied.has(outcome.id)) continue;
        if (outcome.nextAttemptAt) again.push({ id: outcome.id, dueMs: outcome.nextAttemptAt.getTime() });
        else {
          finished.push(outcome.id);
          eventsFinished.inc({ status: outcome.status });
        }
      }
      await Promise.all([this.schedule.complete(finished), this.schedule.moveToDue(again)]);
    } catch (err) {
      // The outcomes are written: an event whose entry was not updated is put right when its lease expires.
      this.log.error("updating the schedule after recording outcomes failed", { err, count: batch.length });
    }
  }

  /**
   * Keeps alive the leases of events whose outcome waits to be written, so that no other worker claims and sends them
   * again while PostgreSQL is slow. Each is extended once half its lease is gone; a lease that ended meanwhile (the
   * outcome written, the event finished) is not made again.
   */
  private async keepLeases(): Promise<void> {
    if (this.recording.size === 0 || this.extending) return;
    const now = Date.now();
    const until = now + this.leaseMs;
    const ids: string[] = [];
    for (const [id, leaseUntil] of this.recording) {
      if (leaseUntil - now < this.leaseMs / 2) ids.push(id);
    }
    if (ids.length === 0) return;
    this.extending = true;
    try {
      await this.schedule.extend(ids, until);
      for (const id of ids) if (this.recording.has(id)) this.recording.set(id, until);
    } catch (err) {
      this.log.warn("extending the leases of unwritten outcomes failed", { err, count: ids.length });
    } finally {
      this.extending = false;
    }
  }
}
