// The delivery worker: claim due events from the schedule (claims.ts), admit them within the process's, host's and
// key's limits (admission.ts, paced by pacing.ts), send, turn each result into an outcome (outcome.ts) written in
// batches (outcome-writer.ts), reschedule or finish. This class composes the parts and owns start and stop; its
// periodic checks (held events, schedule reconciliation) run on a job runner.
import { newId } from "../../common/ids.ts";
import { JobRunner } from "../../common/jobs.ts";
import { createLogger, type Logger } from "../../common/logger.ts";
import { sleep } from "../../common/timing.ts";
import type { Schedule, ScheduleEntry } from "../schedule.ts";
import type { DelivererStore } from "../db/store.ts";
import type { AttemptOutcome, Sender } from "../send.ts";
import type { TargetCache } from "../targets.ts";
import { queueTarget } from "../senders.ts";
import { deliveryHeaders } from "../sign.ts";
import { attemptsTotal, deliveryLatency, destinationFailures, scheduleRebuilds } from "../metrics.ts";
import { reconcileSchedule, scheduleReconcileJob, type ReconcileResult } from "../jobs/schedule-reconcile.ts";
import { HeldEvents, heldResumeJob } from "../jobs/held-resume.ts";
import { EVENT_PAGE, leaseOf, REBUILD_LOCK_MS, resolveOptions, type ResolvedOptions, type WorkerOptions } from "./defaults.ts";
import { Admission, type Waiting } from "./admission.ts";
import { keyQueue, Pacing } from "./pacing.ts";
import { OutcomeWriter } from "./outcome-writer.ts";
import { attemptOutcome } from "./outcome.ts";
import { ClaimLoop } from "./claims.ts";

export class DeliveryWorker {
  private readonly o: ResolvedOptions;
  private readonly log: Logger;
  private running = false;
  private readonly aborter = new AbortController();
  private readonly pacing: Pacing;
  private readonly admission: Admission;
  private readonly writer: OutcomeWriter;
  private readonly claims: ClaimLoop;
  private readonly held: HeldEvents;
  private jobs: JobRunner | undefined;
  private reconciling: Promise<ReconcileResult> | undefined;
  private holdCheck: Promise<void> | undefined;
  readonly leaseMs: number;
  /** LEASE_MARGIN_MS, or half of what a short lease leaves beyond an attempt. */
  private readonly leaseMarginMs: number;

  constructor(
    private readonly store: DelivererStore,
    private readonly schedule: Schedule,
    targets: TargetCache,
    private readonly sender: Sender,
    opts: WorkerOptions,
  ) {
    ({ leaseMs: this.leaseMs, leaseMarginMs: this.leaseMarginMs } = leaseOf(opts));
    this.o = resolveOptions(opts, this.leaseMs);
    this.log = opts.logger ?? createLogger({ service: "deliverer" });
    this.pacing = new Pacing(this.o);
    this.admission = new Admission(this.o, this.pacing, {
      attempt: (w) => this.attempt(w),
      running: () => this.running,
      ended: () => this.wake(),
      giveBack: (entries) => this.giveBack(entries),
    });
    this.writer = new OutcomeWriter(store, schedule, this.o, this.leaseMs, this.log);
    this.held = new HeldEvents(store, schedule, targets, this.leaseMs);
    this.claims = new ClaimLoop({
      store,
      schedule,
      targets,
      admission: this.admission,
      writer: this.writer,
      pacing: this.pacing,
      o: this.o,
      leaseMs: this.leaseMs,
      leaseMarginMs: this.leaseMarginMs,
      log: this.log,
      rebuildIfLost: async () => {
        if (!(await this.schedule.isBuilt())) await this.rebuild();
      },
      giveBack: (entries) => this.giveBack(entries),
    });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.claims.start();
    this.jobs = new JobRunner(this.log)
      .add(heldResumeJob(() => this.resumeHeld(), this.o.holdCheckMs))
      .add(scheduleReconcileJob(() => this.reconcile(), this.o.reconcileMs));
    this.jobs.start();
    // Twice within the margin an outcome has left of its lease when its attempt ends.
    this.writer.start(this.leaseMarginMs);
  }

  /** Wakes the claim loop at once (new events were scheduled in this process). */
  wake(): void {
    this.claims.wake();
  }

  inFlight(): number {
    return this.admission.inflight.size;
  }

  /**
   * Stops claiming, lets attempts in flight finish for up to `graceMs`, aborts the rest and puts their events
   * back in the schedule (not counted as attempts), then writes every outcome.
   */
  async stop(graceMs = 5_000): Promise<void> {
    if (!this.running) return;
    this.running = false;
    const jobs = this.jobs?.stop();
    this.jobs = undefined;
    await this.claims.stop();
    await jobs;
    await this.reconciling?.catch(() => {});
    await this.holdCheck?.catch(() => {});
    // Claims that have not started go back to the schedule at once (not attempts).
    await this.giveBack(this.admission.takeUnstarted().map((w) => ({ id: w.row.id, dueMs: Date.now() })));
    const all = Promise.all(this.admission.inflight.values());
    const timedOut = await Promise.race([all.then(() => false), sleep(graceMs).then(() => true)]);
    if (timedOut) {
      this.aborter.abort();
      await all;
    }
    await this.writer.stop();
  }

  async rebuild(): Promise<number> {
    if (!(await this.schedule.tryLock("rebuild", REBUILD_LOCK_MS))) return 0;
    try {
      let after = "";
      let added = 0;
      for (;;) {
        const page = await this.store.pendingPage(after, EVENT_PAGE);
        if (page.length === 0) break;
        added += await this.schedule.addMissing(page);
        after = page[page.length - 1]!.id;
      }
      await this.schedule.markBuilt();
      scheduleRebuilds.inc();
      this.log.info("schedule rebuilt from PostgreSQL", { added });
      return added;
    } finally {
      await this.schedule.unlock("rebuild");
    }
  }

  /** One reconciliation pass (jobs/schedule-reconcile.ts); a pass still running is joined rather than doubled. */
  reconcile(): Promise<ReconcileResult> {
    this.reconciling ??= reconcileSchedule(this.store, this.schedule, {
      intervalMs: this.o.reconcileMs,
      graceMs: this.o.reconcileGraceMs,
      limit: this.o.reconcileLimit,
    }, this.log).finally(() => {
      this.reconciling = undefined;
    });
    return this.reconciling;
  }

  /**
   * One held check (jobs/held-resume.ts): held events whose subscription is active again go back into the schedule;
   * a deleted one's are removed. A check still running is joined.
   */
  resumeHeld(): Promise<void> {
    this.holdCheck ??= this.held
      .check()
      .then((released) => {
        if (released > 0) this.wake();
      })
      .finally(() => {
        this.holdCheck = undefined;
      });
    return this.holdCheck;
  }

  private async attempt(w: Waiting): Promise<void> {
    const { row, target, host } = w;
    const body = row.payload;
    const startedAt = new Date();
    const headers = deliveryHeaders({ eventId: row.id, subscriptionId: row.subscriptionId, secrets: target.secrets, body, at: startedAt });
    let result: AttemptOutcome;
    const queue = queueTarget(target);
    try {
      result = await this.sender.send({ url: target.url, body, headers, queue }, this.aborter.signal);
    } catch (err) {
      this.log.error("send failed unexpectedly", { err, eventId: row.id });
      result = { ok: false, status: null, body: "internal error while sending", retryAfterMs: null, failure: "internal", durationMs: 0 };
    }
    if (result.failure === "aborted") {
      // Shutdown: not an attempt; the event goes back to the schedule for another worker.
      await this.schedule.moveToDue([{ id: row.id, dueMs: Date.now() }]).catch(() => {});
      return;
    }
    this.pacing.pace(host, result.durationMs);
    if (w.key !== undefined) this.pacing.pace(keyQueue(w.key), result.durationMs);
    const label = result.ok ? "success" : (result.failure ?? "http");
    attemptsTotal.inc({ result: label });
    deliveryLatency.observe({ result: label }, result.durationMs / 1000);
    if (!result.ok) destinationFailures.inc({ host, reason: label });

    // One line per attempt: failures at info (what an operator looks for), successes at debug (the bulk). The
    // destination's host only, never its path or query (they may carry the customer's tokens), nor response bodies.
    const attemptFields = { eventId: row.id, host, status: result.status, ms: Math.round(result.durationMs), attempt: row.attempts + 1 };
    if (result.ok) this.log.debug("delivery attempt", attemptFields);
    else {
      this.log.info("delivery attempt failed", {
        ...attemptFields,
        error: label,
        // Without an HTTP answer the body is the sender's own reason ("connection refused", "TLS error: …").
        ...(result.status === null ? { reason: result.body } : {}),
      });
    }
    const outcome = attemptOutcome({
      row,
      result,
      attemptId: newId("att"),
      startedAt,
      queue: queue !== undefined,
      retrySchedule: this.o.retrySchedule,
      random: this.o.random,
      now: Date.now(),
    });
    this.writer.add(outcome, w.leaseUntil);
  }

  /** Puts claimed events back in the schedule; a failure is logged (their leases expire and they are claimed again). */
  private giveBack(entries: ScheduleEntry[]): Promise<void> {
    return this.schedule.moveToDue(entries).catch((err) => this.log.warn("releasing claims failed", { err }));
  }
}
