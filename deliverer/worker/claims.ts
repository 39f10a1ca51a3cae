// The claim pipeline: claim due events from the schedule in batches while the process has room, load their rows
// and targets, and hand each to admission (or back to the schedule: due later, held, cancelled, destination full).
// Up to CLAIMS_IN_FLIGHT claims load and dispatch at once, so the next is at hand while the current one is sent.
import type { DeliveryTarget } from "../../gen/webhooks/registry/v1/registry_pb.ts";
import type { Logger } from "../../common/logger.ts";
import { Pause } from "../../common/timing.ts";
import type { HoldReason } from "../../common/hold-reasons.ts";
import type { Schedule, ScheduleEntry } from "../schedule.ts";
import type { DelivererStore } from "../db/store.ts";
import type { ClaimedEvent } from "../db/types.ts";
import { holdReason, type TargetCache } from "../targets.ts";
import { destinationKey } from "../senders.ts";
import { eventsHeld, leasesReclaimed } from "../metrics.ts";
import type { Admission, Waiting } from "./admission.ts";
import type { OutcomeWriter } from "./outcome-writer.ts";
import type { Pacing } from "./pacing.ts";
import { CLAIMS_IN_FLIGHT, DUE_SLACK_MS, ERROR_PAUSE_MS, RETRY_LOAD_MS, WAKE_COALESCE_MS, type ResolvedOptions } from "./defaults.ts";

export interface ClaimDeps {
  store: DelivererStore;
  schedule: Schedule;
  targets: TargetCache;
  admission: Admission;
  writer: OutcomeWriter;
  pacing: Pacing;
  o: ResolvedOptions;
  leaseMs: number;
  leaseMarginMs: number;
  log: Logger;
  /** Rebuilds the schedule when it was lost; checked before claims at most every rebuildCheckMs. */
  rebuildIfLost(): Promise<void>;
  giveBack(entries: ScheduleEntry[]): Promise<void>;
}

export class ClaimLoop {
  private running = false;
  private loopDone: Promise<void> | undefined;
  /** The loop's pause; a wake-up while it is busy makes the next pause return at once. */
  private readonly pause = new Pause();
  private wakeTimer: ReturnType<typeof setTimeout> | undefined;
  /** Claims whose rows are loading or being dispatched, and how many events they hold. */
  private readonly claims = new Set<Promise<void>>();
  private claimedEvents = 0;
  /** Claims wait until then: a batch found every destination full, or its load failed. */
  private claimAfter = 0;
  private lastRebuildCheck = 0;

  constructor(private readonly d: ClaimDeps) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loopDone = this.loop();
  }

  /** Claims soon (new events were scheduled in this process), coalescing calls within WAKE_COALESCE_MS. */
  wake(): void {
    if (this.wakeTimer !== undefined) return;
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = undefined;
      this.pause.wake();
    }, WAKE_COALESCE_MS);
  }

  /** Stops claiming; resolves once the loop and the claims being dispatched have ended. */
  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
    this.pause.wake();
    await this.loopDone;
    await Promise.all(this.claims);
  }

  private async loop(): Promise<void> {
    const { o, admission, writer, schedule } = this.d;
    while (this.running) {
      try {
        await this.maybeRebuild();
        const held = this.claimAfter - Date.now();
        if (held > 0) {
          await this.pause.wait(held);
          continue;
        }
        const inflight = admission.inflight.size;
        const busy = inflight + admission.waitingSize + admission.readySize + this.claimedEvents;
        // Attempt slots (with the prefetched round beyond them) and waiting places are budgeted apart, so a deep queue
        // for one fast host never stops the claims that find other hosts' events. Events of claims still loading
        // count against both. Outcomes not written yet count against the backlog with everything else held: while
        // PostgreSQL stalls, the claims stop rather than send events whose outcomes only pile up.
        const free = Math.min(
          o.concurrency - inflight + o.prefetch - admission.readySize - this.claimedEvents,
          o.concurrency - admission.waitingSize - this.claimedEvents,
          o.outcomeBacklog - busy - writer.size,
        );
        // Claim in batches: while attempts are running, wait until a quarter of the slots are free rather than
        // paying a claim and a row load for every single slot.
        if (this.claims.size >= CLAIMS_IN_FLIGHT || free <= 0 || (busy > 0 && free < Math.max(1, Math.floor(o.concurrency / 4)))) {
          await this.pause.wait(o.pollMs);
          continue;
        }
        const now = Date.now();
        const claim = await schedule.claim(now, now + this.d.leaseMs, Math.min(free, o.claimBatch));
        if (claim.reclaimed > 0) leasesReclaimed.inc(claim.reclaimed);
        if (claim.ids.length === 0) {
          await this.pause.wait(o.pollMs);
          continue;
        }
        this.loadAndDispatch(claim.ids, now);
        // Nothing more was due: wait for a wake() (or the poll) instead of an empty claim after every claim.
        if (!claim.more) await this.pause.wait(o.pollMs);
      } catch (err) {
        this.d.log.error("delivery loop error", { err });
        await this.pause.wait(ERROR_PAUSE_MS);
      }
    }
  }

  private async maybeRebuild(): Promise<void> {
    const now = Date.now();
    if (now - this.lastRebuildCheck < this.d.o.rebuildCheckMs) return;
    this.lastRebuildCheck = now;
    await this.d.rebuildIfLost();
  }

  /** Loads and dispatches a claim while the loop goes on to the next; the loop is woken when it is done. */
  private loadAndDispatch(ids: string[], claimedAt: number): void {
    this.claimedEvents += ids.length;
    const done: Promise<void> = this.dispatch(ids, claimedAt)
      .then(
        // Every host in the batch was full: claiming again at once would only hand the next batch back too.
        (deferred) => {
          if (deferred === ids.length) this.claimAfter = Date.now() + this.d.o.deferMs;
        },
        (err: unknown) => {
          this.d.log.error("delivery loop error", { err });
          this.claimAfter = Date.now() + ERROR_PAUSE_MS;
        },
      )
      .finally(() => {
        this.claimedEvents -= ids.length;
        this.claims.delete(done);
        this.pause.wake();
      });
    this.claims.add(done);
  }

  /** Starts or queues claimed events; returns how many went back to the schedule because their host was full. */
  private async dispatch(ids: string[], claimedAt: number): Promise<number> {
    try {
      return await this.dispatchClaimed(ids, claimedAt);
    } catch (err) {
      // PostgreSQL or the registry failed before the attempts started: give the claims back rather than letting
      // them wait for their leases to expire, all but those of events this process holds already.
      const holds = this.holding();
      await this.d.giveBack(ids.filter((id) => !holds(id)).map((id) => ({ id, dueMs: Date.now() + RETRY_LOAD_MS })));
      throw err;
    }
  }

  private async dispatchClaimed(ids: string[], claimedAt: number): Promise<number> {
    const { store, schedule, admission, writer, pacing } = this.d;
    const rows = await store.loadClaimed(ids);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const now = Date.now();
    // A row due later than its schedule entry said: a reschedule lost between PostgreSQL and Redis (crash).
    const dueLater = (r: ClaimedEvent) => r.nextAttemptAt !== null && r.nextAttemptAt.getTime() > now + DUE_SLACK_MS;
    const due = rows.filter((r) => r.status === "pending" && !dueLater(r));
    const targets = due.length > 0 ? await this.d.targets.get(due.map((r) => r.subscriptionId)) : new Map<string, DeliveryTarget>();
    const drop: string[] = [];
    const later: ScheduleEntry[] = [];
    const cancelled: string[] = [];
    const held = new Map<HoldReason, string[]>();
    let full = 0;
    // An attempt started after this moment could outlast the lease: another worker might claim the event meanwhile.
    const leaseUntil = claimedAt + this.d.leaseMs;
    const startBy = leaseUntil - this.d.o.timeoutMs - this.d.leaseMarginMs;
    // Events this process holds already are left to it: a lease of ours that expired while its attempt was still
    // running or its outcome still being written (a stalled write), which the claim renewed, or one the other claim in
    // flight took too (its lease expired while this claim loaded). Checked after the waits for the rows and the
    // destinations: from here to the starts nothing waits, so no other dispatch can come in between.
    const holds = this.holding();
    for (const id of ids) {
      if (holds(id)) {
        if (writer.isRecording(id)) writer.claimedWhileRecording(id);
        continue;
      }
      const row = byId.get(id);
      // No row: a reservation whose insert never committed, or a deleted subscription's event.
      if (!row || row.status !== "pending") {
        drop.push(id);
        continue;
      }
      if (dueLater(row)) {
        // PostgreSQL knows the due time.
        later.push({ id, dueMs: row.nextAttemptAt!.getTime() });
        continue;
      }
      const target = targets.get(row.subscriptionId);
      if (!target || !target.exists) {
        cancelled.push(row.id);
        continue;
      }
      const reason = holdReason(target);
      if (reason) {
        held.set(reason, [...(held.get(reason) ?? []), row.id]);
        continue;
      }
      // The "host" of fairness: the URL's host, or the broker and exchange / subject of a queue destination.
      const w: Waiting = { row, target, host: destinationKey(target), ...admission.keyOf(target), startBy, leaseUntil };
      const refused = admission.admit(w);
      if (refused) {
        later.push({ id: row.id, dueMs: now + pacing.deferral(refused, w.key, w.keySlots) });
        // A key at its cap does not hold the claims back: its events are pushed past its next round instead, and
        // the next claim finds the other keys' events.
        if (refused === "host") full++;
      }
    }
    admission.startReady();
    if (cancelled.length > 0) {
      // The subscription is gone: its events go with it (docs/CONTRACT.md "Subscriptions", DELETE).
      await store.deleteEvents(cancelled);
      drop.push(...cancelled);
    }
    for (const [reason, ids] of held) {
      await store.markHeld(ids, reason);
      eventsHeld.inc({ reason }, ids.length);
      drop.push(...ids);
    }
    await schedule.remove(drop);
    await schedule.moveToDue(later);
    return full;
  }

  /**
   * Whether this process holds an event already, as things stand now: its attempt running, its outcome not written
   * yet, or the event claimed and waiting to start.
   */
  private holding(): (id: string) => boolean {
    const admitted = this.d.admission.holding();
    return (id) => admitted(id) || this.d.writer.isRecording(id);
  }
}
