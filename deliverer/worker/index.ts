// The delivery loop: claim due events from the schedule, look up their targets, send, record outcomes in batches,
// reschedule or finish. Concurrency is bounded per process, per destination host and, for HTTPS, per API key over all
// its hosts (its `deliveries` quota): a host or key at its limit gets its events put back for a moment instead of
// occupying slots, so one slow or dead destination, or one customer with many of them, cannot starve the others.
import type { DeliveryTarget } from "../../gen/webhooks/registry/v1/registry_pb.ts";
import { newId } from "../../common/ids.ts";
import { isExhausted, nextDelay } from "../../common/retry-policy.ts";
import { createLogger, type Logger } from "../../common/logger.ts";
import type { Schedule, ScheduleEntry } from "../schedule.ts";
import type { DelivererStore } from "../db/store.ts";
import type { ClaimedEvent, Outcome } from "../db/types.ts";
import type { AttemptOutcome, Sender } from "../send.ts";
import { holdReason, type TargetCache } from "../targets.ts";
import { HOLD_REASONS, type HoldReason } from "../../common/hold-reasons.ts";
import { destinationKey, queueTarget } from "../senders.ts";
import { reconcileSchedule, type ReconcileResult } from "../reconcile.ts";
import { QUOTA_DEFAULTS } from "../../common/quotas.ts";
import { deliveryHeaders } from "../sign.ts";
import {
  attemptsTotal,
  deliveryLatency,
  destinationFailures,
  eventsFinished,
  eventsHeld,
  heldSubscriptions,
  leasesReclaimed,
  scheduleRebuilds,
  waitingReleased,
} from "../metrics.ts";

export interface WorkerOptions {
  /** Delays before each automatic attempt (RETRY_SCHEDULE); its length is the number of attempts. */
  retrySchedule: number[];
  /** Total time of one attempt (DELIVERY_TIMEOUT_MS). */
  timeoutMs: number;
  /** Attempts in flight in this process (default 512). */
  concurrency?: number;
  /**
   * Events claimed and loaded beyond the process's free attempt slots, started as slots free (default 512): the next
   * round is at hand when the current one is acknowledged, instead of the slots sitting empty through a claim and its
   * row load.
   */
  prefetch?: number;
  /** Attempts in flight per destination host in this process. */
  perHostConcurrency?: number;
  /**
   * HTTPS attempts in flight per API key in this process, over all its hosts (the `deliveries` quota's default,
   * QUOTA_DELIVERIES_IN_FLIGHT; a key's own override comes with its delivery target). Per-host slots alone let a key
   * with twenty host names take twenty hosts' worth of slots. Queue destinations are not counted: their brokers are
   * the operator's, each destination has its own window, and a publish takes milliseconds.
   */
  keyConcurrency?: number;
  /**
   * Attempts in flight per queue destination (broker + exchange / subject) in this process. Higher than a host's:
   * a broker the operator registered is built for many unconfirmed publishes on one channel / connection (confirms
   * and JetStream acks come back in bulk), and its throughput grows with the publishes in flight. Default 256, the
   * window of the bare publish loops in `bench delivery-queues`: at 128 a NATS subject's slots sat empty for a third
   * of a run, waiting for the next claim and its row load.
   */
  queuePerDestinationConcurrency?: number;
  /**
   * Most events claimed per round (default 256): two claims of 256 fit the budgets of 512 attempts and 512 waiting
   * places together, so the next one loads while the current one is sent. (One claim at a time, 512 instead of 256
   * took a queue delivery from ~100 to ~76 µs of the deliverer's CPU; a second claim of 512 in flight let a single
   * destination's waiting queue overflow, and RabbitMQ to one exchange fell from ~16,500 to ~14,300 deliveries/s.)
   */
  claimBatch?: number;
  /**
   * How long a claim keeps an event from other workers (default twice the delivery timeout plus 10 s). Tests shorten
   * it; it must outlast an attempt (what it leaves beyond one is shared by the start window and the outcome's margin).
   */
  leaseMs?: number;
  /** Idle poll interval when nothing is due. */
  pollMs?: number;
  /** How far a host at its limit pushes its events back. */
  deferMs?: number;
  /** How often held events (disabled subscription, revoked key) are checked for resumption. */
  holdCheckMs?: number;
  /** How often the schedule is checked for having been lost (Redis restarted empty, FLUSHDB). */
  rebuildCheckMs?: number;
  /**
   * How often overdue pending events are checked for entries Redis lost one by one (reconcile.ts); default 30 s.
   * A safety net, not a delivery path: the interval only bounds how long such an event waits.
   */
  reconcileMs?: number;
  /** How overdue an event must be to be checked, and how far ahead a put-back entry comes due; default the lease. */
  reconcileGraceMs?: number;
  /** Most events one reconciliation pass reads (the next pass continues after them). */
  reconcileLimit?: number;
  /** Outcomes that start a write at once / longest wait before writing fewer. */
  flushSize?: number;
  flushMs?: number;
  /**
   * Writes of outcomes running at once (default 1). Outcomes that end while a write runs collect into the next one,
   * so one write at a time still keeps up, in fewer and larger statements. Four at once made PostgreSQL spend more per
   * outcome on the same index pages (bench delivery-queues, NATS, three alternated pairs: 42–56 µs of its CPU a
   * delivery against 52–70, 10–15% fewer deliveries a second); HTTPS measured the same either way (bench delivery).
   */
  flushConcurrency?: number;
  /** Most outcomes in one write (default 2,000). */
  flushMax?: number;
  /**
   * Most events this process holds at once, from claim until their outcome is written (default two full writes
   * beyond its attempt slots, waiting places and prefetched round, so it never binds while PostgreSQL keeps up). While
   * writes stall, it stops the claims: the process no longer sends its whole backlog with nothing recorded.
   */
  outcomeBacklog?: number;
  random?: () => number;
  logger?: Logger;
}

/**
 * Claims being loaded and dispatched at once. One at a time, the claim loop was the ceiling of a fast destination:
 * each round waited for its claim, then its row load, then signed and sent its batch before the next claim began
 * (bench delivery-queues, NATS to 32 subjects: the loop busy for the whole run, the process's slots short of events
 * three quarters of it). With two, the next claim and its row load run while the current batch is sent.
 */
const CLAIMS_IN_FLIGHT = 2;

/**
 * Time kept free at the end of a lease for writing an attempt's outcome (less where a short lease has no room). Leases of
 * outcomes still waiting to be written are looked at twice within it (keepLeases).
 */
const LEASE_MARGIN_MS = 5_000;

/**
 * wake() claims this long after the first call, so the events scheduled meanwhile share one claim (a claim is a
 * script on every schedule shard). One claim per test event was a quarter of the process's CPU under a stream of
 * POST …/test (bench api); a few milliseconds are nothing beside a delivery's own latency.
 */
const WAKE_COALESCE_MS = 5;

/** Subscriptions the held check looks up in the registry at once (one page of heldSubscriptions). */
const HELD_PAGE = 500;

/** How far an event whose key is at its cap is pushed back before any of the key's attempts has ended here. */
const KEY_DEFER_UNKNOWN_MS = 1_000;

/** The waiting queue of events held back by their key's cap (host names never hold a space). */
function keyQueue(keyId: string): string {
  return `key ${keyId}`;
}

interface Waiting {
  row: ClaimedEvent;
  target: DeliveryTarget;
  /** The destination's unit of fairness (destinationKey). */
  host: string;
  /** The API key whose HTTPS attempts in flight are capped together; undefined for a queue destination. */
  key: string | undefined;
  /** That key's cap (at least 1). */
  keySlots: number;
  /** Latest start that still ends inside the claim's lease. */
  startBy: number;
  /** When the claim's lease ends. */
  leaseUntil: number;
}

export class DeliveryWorker {
  private readonly o: Required<Omit<WorkerOptions, "logger" | "leaseMs">>;
  private readonly log: Logger;
  private running = false;
  private loopDone: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  /** A wake() came while the loop was not idle: its next idle() returns at once. */
  private woken = false;
  private wakeTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly inflight = new Map<string, Promise<void>>();
  private readonly perHost = new Map<string, number>();
  /** HTTPS attempts in flight per API key. */
  private readonly perKey = new Map<string, number>();
  /** Per key at its cap, when the next of its events handed back comes due (deferral). */
  private readonly keyHorizon = new Map<string, number>();
  // Claimed events whose host is at its limit wait here for one of its slots (and those whose key is at its cap, in
  // the key's queue, keyQueue()). How many may wait follows the host's
  // recent attempt time (see waitCap): a fast host keeps a deep queue, so the loop is not claiming, loading and
  // handing back the same events while its slots turn over; a slow or dead one keeps one round of attempts. An event
  // still waiting when its lease could no longer cover an attempt goes back to the schedule instead of being sent.
  private readonly waiting = new Map<string, Waiting[]>();
  private waitingCount = 0;
  // Claimed events whose destination has a free slot while the process has none (the prefetched round), in claim order.
  // They start as attempts end, ahead of anything claimed later.
  private readonly ready: Waiting[] = [];
  /** Claims whose rows are loading or being dispatched, and how many events they hold. */
  private readonly claims = new Set<Promise<void>>();
  private claimedEvents = 0;
  /** Claims wait until then: a batch found every destination full, or its load failed. */
  private claimAfter = 0;
  /** Per host, a moving average of attempt time in ms (unknown until its first attempt ends). */
  private readonly hostMs = new Map<string, number>();
  private readonly aborter = new AbortController();
  private pending: { outcome: Outcome; host: string }[] = [];
  /**
   * Events whose attempt ended here and whose outcome is not written yet (buffered or being written), with when their
   * lease ends. Until the outcome is written, PostgreSQL still shows the attempt count the event had before, so a
   * claim of the same event would pass every other check and send it again: the lease is kept alive meanwhile
   * (keepLeases), and a claim of this process leaves such an event alone (holding).
   */
  private readonly recording = new Map<string, number>();
  /**
   * Events of `recording` that a claim of this process took again (a retry or recover put them back in the schedule
   * while their old outcome waited): once that outcome is written, or found to belong to a cycle gone by, the claim
   * is released so the new cycle is attempted at once.
   */
  private readonly claimedAgain = new Set<string>();
  private leaseKeeper: ReturnType<typeof setInterval> | undefined;
  private extending = false;
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly writes = new Set<Promise<void>>();
  /** Outcomes were due to be written while every write slot was busy: the next write to end starts the next one. */
  private flushDue = false;
  private timers: ReturnType<typeof setInterval>[] = [];
  private lastRebuildCheck = 0;
  private reconciling: Promise<ReconcileResult> | undefined;
  /** The hold reason last written for each subscription with held events (resumeHeld). */
  private readonly heldReasons = new Map<string, HoldReason>();
  private holdCheck: Promise<void> | undefined;
  readonly leaseMs: number;
  /** LEASE_MARGIN_MS, or half of what a short lease leaves beyond an attempt. */
  private readonly leaseMarginMs: number;

  constructor(
    private readonly store: DelivererStore,
    private readonly schedule: Schedule,
    private readonly targets: TargetCache,
    private readonly sender: Sender,
    opts: WorkerOptions,
  ) {
    // Longer than any attempt (and its write), so a live worker never loses a claim to another one mid-request.
    this.leaseMs = opts.leaseMs ?? opts.timeoutMs * 2 + 10_000;
    // The default lease always leaves the whole margin (it is 10 s longer than two attempts).
    this.leaseMarginMs = Math.min(LEASE_MARGIN_MS, Math.floor((this.leaseMs - opts.timeoutMs) / 2));
    if (this.leaseMarginMs <= 0) throw new Error("the lease must outlast an attempt and the margin for writing its outcome");
    this.o = {
      retrySchedule: opts.retrySchedule,
      timeoutMs: opts.timeoutMs,
      concurrency: opts.concurrency ?? 512,
      prefetch: opts.prefetch ?? 512,
      perHostConcurrency: opts.perHostConcurrency ?? 32,
      keyConcurrency: opts.keyConcurrency ?? QUOTA_DEFAULTS.deliveries.value,
      queuePerDestinationConcurrency: opts.queuePerDestinationConcurrency ?? 256,
      claimBatch: opts.claimBatch ?? 256,
      pollMs: opts.pollMs ?? 50,
      deferMs: opts.deferMs ?? 250,
      holdCheckMs: opts.holdCheckMs ?? 2_000,
      rebuildCheckMs: opts.rebuildCheckMs ?? 1_000,
      reconcileMs: opts.reconcileMs ?? 30_000,
      reconcileGraceMs: opts.reconcileGraceMs ?? this.leaseMs,
      reconcileLimit: opts.reconcileLimit ?? 20_000,
      flushSize: opts.flushSize ?? 256,
      flushMs: opts.flushMs ?? 20,
      flushConcurrency: opts.flushConcurrency ?? 1,
      flushMax: opts.flushMax ?? 2_000,
      outcomeBacklog: opts.outcomeBacklog ?? 2 * (opts.flushMax ?? 2_000) + 2 * (opts.concurrency ?? 512) + (opts.prefetch ?? 512),
      random: opts.random ?? Math.random,
    };
    this.log = opts.logger ?? createLogger({ service: "deliverer" });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loopDone = this.loop();
    this.timers.push(setInterval(() => void this.resumeHeld().catch((err) => this.log.warn("held check failed", { err })), this.o.holdCheckMs));
    this.timers.push(setInterval(() => void this.reconcile().catch((err) => this.log.warn("schedule reconciliation failed", { err })), this.o.reconcileMs));
    // Twice within the margin an outcome has left of its lease when its attempt ends.
    this.leaseKeeper = setInterval(() => void this.keepLeases(), Math.max(10, Math.floor(this.leaseMarginMs / 2)));
  }

  /** Wakes the claim loop at once (new events were scheduled in this process). */
  wake(): void {
    if (this.wakeTimer !== undefined) return;
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = undefined;
      this.woken = true;
      this.wakeUp?.();
    }, WAKE_COALESCE_MS);
  }

  inFlight(): number {
    return this.inflight.size;
  }

  /**
   * Stops claiming, lets attempts in flight finish for up to `graceMs`, aborts the rest and puts their events
   * back in the schedule (not counted as attempts), then writes every outcome.
   */
  async stop(graceMs = 5_000): Promise<void> {
    if (!this.running) return;
    this.running = false;
    for (const t of this.timers) clearInterval(t);
    clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
    this.woken = true;
    this.wakeUp?.();
    await this.loopDone;
    await Promise.all(this.claims);
    await this.reconciling?.catch(() => {});
    await this.holdCheck?.catch(() => {});
    // Claims that have not started go back to the schedule at once (not attempts).
    const unstarted = this.unstarted().map((w) => ({ id: w.row.id, dueMs: Date.now() }));
    this.waiting.clear();
    this.waitingCount = 0;
    this.ready.length = 0;
    await this.giveBack(unstarted);
    const all = Promise.all(this.inflight.values());
    const timedOut = await Promise.race([all.then(() => false), Bun.sleep(graceMs).then(() => true)]);
    if (timedOut) {
      this.aborter.abort();
      await all;
    }
    while (this.pending.length > 0 || this.writes.size > 0) {
      await this.flush();
      await this.written();
    }
    clearInterval(this.leaseKeeper);
    this.leaseKeeper = undefined;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      try {
        await this.maybeRebuild();
        const held = this.claimAfter - Date.now();
        if (held > 0) {
          await this.idle(held);
          continue;
        }
        const busy = this.inflight.size + this.waitingCount + this.ready.length + this.claimedEvents;
        // Attempt slots (with the prefetched round beyond them) and waiting places are budgeted apart, so a deep queue
        // for one fast host never stops the claims that find other hosts' events. Events of claims still loading
        // count against both. Outcomes not written yet count against the backlog with everything else held: while
        // PostgreSQL stalls, the claims stop rather than send events whose outcomes only pile up.
        const free = Math.min(
          this.o.concurrency - this.inflight.size + this.o.prefetch - this.ready.length - this.claimedEvents,
          this.o.concurrency - this.waitingCount - this.claimedEvents,
          this.o.outcomeBacklog - busy - this.recording.size,
        );
        // Claim in batches: while attempts are running, wait until a quarter of the slots are free rather than
        // paying a claim and a row load for every single slot.
        if (this.claims.size >= CLAIMS_IN_FLIGHT || free <= 0 || (busy > 0 && free < Math.max(1, Math.floor(this.o.concurrency / 4)))) {
          await this.idle(this.o.pollMs);
          continue;
        }
        const now = Date.now();
        const claim = await this.schedule.claim(now, now + this.leaseMs, Math.min(free, this.o.claimBatch));
        if (claim.reclaimed > 0) leasesReclaimed.inc(claim.reclaimed);
        if (claim.ids.length === 0) {
          await this.idle(this.o.pollMs);
          continue;
        }
        this.loadAndDispatch(claim.ids, now);
        // Nothing more was due: wait for a wake() (or the poll) instead of an empty claim after every claim.
        if (!claim.more) await this.idle(this.o.pollMs);
      } catch (err) {
        this.log.error("delivery loop error", { err });
        await this.idle(500);
      }
    }
  }

  /** Loads and dispatches a claim while the loop goes on to the next; the loop is woken when it is done. */
  private loadAndDispatch(ids: string[], claimedAt: number): void {
    this.claimedEvents += ids.length;
    const done: Promise<void> = this.dispatch(ids, claimedAt)
      .then(
        // Every host in the batch was full: claiming again at once would only hand the next batch back too.
        (deferred) => {
          if (deferred === ids.length) this.claimAfter = Date.now() + this.o.deferMs;
        },
        (err: unknown) => {
          this.log.error("delivery loop error", { err });
          this.claimAfter = Date.now() + 500;
        },
      )
      .finally(() => {
        this.claimedEvents -= ids.length;
        this.claims.delete(done);
        this.woken = true;
        this.wakeUp?.();
      });
    this.claims.add(done);
  }

  private idle(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      let t: ReturnType<typeof setTimeout> | undefined = undefined;
      const done = () => {
        clearTimeout(t);
        this.woken = false;
        if (this.wakeUp === done) this.wakeUp = undefined;
        resolve();
      };
      t = setTimeout(done, ms);
      this.wakeUp = done;
    });
  }

  /** Starts or queues claimed events; returns how many went back to the schedule because their host was full. */
  private async dispatch(ids: string[], claimedAt: number): Promise<number> {
    try {
      return await this.dispatchClaimed(ids, claimedAt);
    } catch (err) {
      // PostgreSQL or the registry failed before the attempts started: give the claims back rather than letting
      // them wait for their leases to expire, all but those of events this process holds already.
      const holds = this.holding();
      await this.giveBack(ids.filter((id) => !holds(id)).map((id) => ({ id, dueMs: Date.now() + 1_000 })));
      throw err;
    }
  }

  private async dispatchClaimed(ids: string[], claimedAt: number): Promise<number> {
    const rows = await this.store.loadClaimed(ids);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const now = Date.now();
    // A row due later than its schedule entry said: a reschedule lost between PostgreSQL and Redis (crash).
    const dueLater = (r: ClaimedEvent) => r.nextAttemptAt !== null && r.nextAttemptAt.getTime() > now + 1_000;
    const due = rows.filter((r) => r.status === "pending" && !dueLater(r));
    const targets = due.length > 0 ? await this.targets.get(due.map((r) => r.subscriptionId)) : new Map<string, DeliveryTarget>();
    const drop: string[] = [];
    const later: ScheduleEntry[] = [];
    const cancelled: string[] = [];
    const held = new Map<HoldReason, string[]>();
    let full = 0;
    // An attempt started after this moment could outlast the lease: another worker might claim the event meanwhile.
    const leaseUntil = claimedAt + this.leaseMs;
    const startBy = leaseUntil - this.o.timeoutMs - this.leaseMarginMs;
    // Events this process holds already are left to it: a lease of ours that expired while its attempt was still
    // running or its outcome still being written (a stalled write), which the claim renewed, or one the other claim in
    // flight took too (its lease expired while this claim loaded). Checked after the waits for the rows and the
    // destinations: from here to the starts nothing waits, so no other dispatch can come in between.
    const holds = this.holding();
    for (const id of ids) {
      if (holds(id)) {
        if (this.recording.has(id)) this.claimedAgain.add(id);
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
      const w: Waiting = { row, target, host: destinationKey(target), ...this.keyOf(target), startBy, leaseUntil };
      if (this.ready.length > 0) this.ready.push(w);
      else {
        const refused = this.place(w);
        if (refused) {
          later.push({ id: row.id, dueMs: now + this.deferral(w, refused) });
          // A key at its cap does not hold the claims back: its events are pushed past its next round instead, and
          // the next claim finds the other keys' events.
          if (refused === "host") full++;
        }
      }
    }
    this.startReady();
    if (cancelled.length > 0) {
      // The subscription is gone: its events go with it (docs/CONTRACT.md "Subscriptions", DELETE).
      await this.store.deleteEvents(cancelled);
      drop.push(...cancelled);
    }
    for (const [reason, ids] of held) {
      await this.store.markHeld(ids, reason);
      eventsHeld.inc({ reason }, ids.length);
      drop.push(...ids);
    }
    await this.schedule.remove(drop);
    await this.schedule.moveToDue(later);
    return full;
  }

  /**
   * Whether this process holds an event already, as things stand now: its attempt running, its outcome not written
   * yet, or the event claimed and waiting to start.
   */
  private holding(): (id: string) => boolean {
    const unstarted = this.waitingCount + this.ready.length > 0 ? new Set(this.unstarted().map((w) => w.row.id)) : undefined;
    return (id) => this.inflight.has(id) || this.recording.has(id) || unstarted?.has(id) === true;
  }

  /** Events claimed and not started: waiting for their destination's slots or for the process's. */
  private unstarted(): Waiting[] {
    return [...this.waiting.values()].flat().concat(this.ready);
  }

  /**
   * Starts an event if its destination, its key and the process have a slot; else it waits for the process's slots
   * (ready), its destination's or its key's (waiting, up to waitCap). Returns which queue was full, if one was.
   */
  private place(w: Waiting): "host" | "key" | undefined {
    const slots = this.hostSlots(w);
    if ((this.perHost.get(w.host) ?? 0) >= slots) return this.enqueue(w.host, w, slots) ? undefined : "host";
    if (!this.keyHasRoom(w)) return this.enqueue(keyQueue(w.key!), w, w.keySlots) ? undefined : "key";
    if (this.inflight.size < this.o.concurrency) this.launch(w);
    else this.ready.push(w);
    return undefined;
  }

  /**
   * How far an event that found a queue full goes back in the schedule: a host's, a moment (deferMs). A key's, spread
   * over the key's coming rounds at the rate its cap lets them run: the first a round from now (the recent pace of its
   * attempts, 1 s before any has ended here, within [deferMs, the attempt timeout]), each next one a slot's share of a
   * round later. Handed back every deferMs instead, a key's deep backlog behind a slow destination came due again and
   * again ahead of the other keys' new events, and the claims spent themselves loading it (bench fairness).
   */
  private deferral(w: Waiting, full: "host" | "key"): number {
    if (full === "host") return this.o.deferMs;
    const key = w.key!;
    const now = Date.now();
    const round = Math.min(this.o.timeoutMs, Math.max(this.o.deferMs, this.hostMs.get(keyQueue(key)) ?? KEY_DEFER_UNKNOWN_MS));
    const due = Math.max(this.keyHorizon.get(key) ?? 0, now + round);
    if (!this.keyHorizon.has(key) && this.keyHorizon.size >= 10_000) {
      for (const [k, t] of this.keyHorizon) if (t < now) this.keyHorizon.delete(k);
    }
    this.keyHorizon.set(key, due + round / w.keySlots);
    return due - now;
  }

  private hostSlots(w: Waiting): number {
    return queueTarget(w.target) ? this.o.queuePerDestinationConcurrency : this.o.perHostConcurrency;
  }

  private keyHasRoom(w: Waiting): boolean {
    return w.key === undefined || (this.perKey.get(w.key) ?? 0) < w.keySlots;
  }

  /** The key whose cap an event's attempt counts against, and that cap: HTTPS destinations only. */
  private keyOf(target: DeliveryTarget): Pick<Waiting, "key" | "keySlots"> {
    if (queueTarget(target)) return { key: undefined, keySlots: 0 };
    return { key: target.keyId, keySlots: Math.max(1, target.keyDeliveriesQuota ?? this.o.keyConcurrency) };
  }

  /** Queues an event for a slot of `name` (a host, or a key's queue); false when that queue is full. */
  private enqueue(name: string, w: Waiting, slots: number): boolean {
    const queue = this.waiting.get(name) ?? [];
    if (queue.length >= this.waitCap(name, slots)) return false;
    queue.push(w);
    this.waiting.set(name, queue);
    this.waitingCount++;
    return true;
  }

  /**
   * An attempt ended: the events waiting for its host's slot, then those waiting for its key's, are placed again
   * while that slot stays free (one whose other limit is full moves to that limit's queue). Anything not placed goes
   * back to the schedule for a moment.
   */
  private refill(ended: Waiting): void {
    const back: ScheduleEntry[] = [];
    const now = Date.now();
    const pump = (name: string, free: () => boolean) => {
      let next: Waiting | undefined;
      while (free() && (next = this.nextWaiting(name))) {
        if (!this.running) back.push({ id: next.row.id, dueMs: now });
        else {
          const refused = this.place(next);
          if (refused) back.push({ id: next.row.id, dueMs: now + this.deferral(next, refused) });
        }
      }
    };
    pump(ended.host, () => (this.perHost.get(ended.host) ?? 0) < this.hostSlots(ended));
    if (ended.key !== undefined) pump(keyQueue(ended.key), () => this.keyHasRoom(ended));
    if (back.length > 0) void this.giveBack(back);
  }

  /** Starts ready events while the process has slots; any whose lease could no longer cover an attempt go back. */
  private startReady(): void {
    // Runs as each attempt ends: nothing to do unless a round was claimed ahead.
    if (this.ready.length === 0) return;
    const now = Date.now();
    const back: ScheduleEntry[] = [];
    const expired: Waiting[] = [];
    let taken = 0;
    while (taken < this.ready.length && this.inflight.size < this.o.concurrency) {
      const w = this.ready[taken++]!;
      if (w.startBy < now) expired.push(w);
      else {
        const refused = this.place(w);
        if (refused) back.push({ id: w.row.id, dueMs: now + this.deferral(w, refused) });
      }
    }
    // Spliced in place, not copied: usually one event is taken.
    if (taken > 0) this.ready.splice(0, taken);
    this.release(expired, now);
    if (back.length > 0) void this.giveBack(back);
  }

  /**
   * Claimed events whose lease could no longer cover an attempt go back to the schedule; one whose lease has ended
   * already is left as it is (another worker may have claimed it since: moving it would take its claim away).
   */
  private release(expired: Waiting[], now: number): void {
    if (expired.length === 0) return;
    waitingReleased.inc(expired.length);
    const back = expired.filter((w) => w.leaseUntil > now).map((w) => ({ id: w.row.id, dueMs: now }));
    if (back.length > 0) void this.giveBack(back);
  }

  /** Puts claimed events back in the schedule; a failure is logged (their leases expire and they are claimed again). */
  private giveBack(entries: ScheduleEntry[]): Promise<void> {
    return this.schedule.moveToDue(entries).catch((err) => this.log.warn("releasing claims failed", { err }));
  }

  /**
   * Events allowed to wait for a host's slots: as many as its slots can start in about one delivery timeout at its
   * recent pace (so a fast host keeps a deep queue), never fewer than one round of slots nor more than 16 rounds.
   * A host whose pace is not known yet (none of its attempts in this process has ended) may queue two rounds: a
   * process starting on a backlog for one destination claims a round for its slots and then another, and with room
   * for one only, that second claim went back to the schedule whole (its events a deferral later, claims held as
   * long), a quarter of a second lost at the start (bench delivery-queues, one subject).
   */
  private waitCap(host: string, slots: number): number {
    const ms = this.hostMs.get(host);
    const rounds = ms === undefined ? 2 : Math.min(16, Math.max(1, Math.floor(this.o.timeoutMs / Math.max(ms, 1))));
    return slots * rounds;
  }

  /** Folds an attempt's time into the recent pace of a host (or of a key's queue): waitCap follows it. */
  private pace(name: string, durationMs: number): void {
    const prevMs = this.hostMs.get(name);
    // Only a pacing hint: forgetting every host now and then bounds the map where destinations churn.
    if (prevMs === undefined && this.hostMs.size >= 10_000) this.hostMs.clear();
    this.hostMs.set(name, prevMs === undefined ? durationMs : prevMs + (durationMs - prevMs) * 0.2);
  }

  /** The next waiting event of a host that can still start inside its lease; later ones' claims are released. */
  private nextWaiting(host: string): Waiting | undefined {
    const queue = this.waiting.get(host);
    if (!queue) return undefined;
    const now = Date.now();
    const expired: Waiting[] = [];
    let next: Waiting | undefined;
    while ((next = queue.shift())) {
      this.waitingCount--;
      if (next.startBy >= now) break;
      expired.push(next);
    }
    if (queue.length === 0) this.waiting.delete(host);
    this.release(expired, now);
    return next;
  }

  /** Starts an attempt, if it still ends inside the claim's lease (checked here, whichever path starts it). */
  private launch(w: Waiting): void {
    const { row, host } = w;
    const now = Date.now();
    if (w.startBy < now) {
      this.release([w], now);
      return;
    }
    count(this.perHost, host, 1);
    if (w.key !== undefined) count(this.perKey, w.key, 1);
    const p = this.attempt(w).finally(() => {
      this.inflight.delete(row.id);
      count(this.perHost, host, -1);
      if (w.key !== undefined) count(this.perKey, w.key, -1);
      this.refill(w);
      if (this.running) this.startReady();
      this.wake();
    });
    this.inflight.set(row.id, p);
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
    this.pace(host, result.durationMs);
    if (w.key !== undefined) this.pace(keyQueue(w.key), result.durationMs);
    const label = result.ok ? "success" : (result.failure ?? "http");
    attemptsTotal.inc({ result: label });
    deliveryLatency.observe({ result: label }, result.durationMs / 1000);
    if (!result.ok) destinationFailures.inc({ host, reason: label });

    const attempts = row.attempts + 1;
    const attempt: Outcome["attempt"] = {
      id: newId("att"),
      at: startedAt,
      durationMs: Math.round(result.durationMs),
      // A failure without an HTTP response: the body is the short reason (timeout, connection refused, TLS, SSRF
      // block, a broker's refusal). A success has no error, also where no HTTP status exists (a broker's "acked").
      error: !result.ok && result.status === null ? result.body : null,
      // A queue destination's answer is the broker's, success or not (issue 12: "acked", "returned: NO_ROUTE", "no
      // stream", "timeout"); an HTTPS attempt has a body only when the endpoint answered.
      responseBody: queue !== undefined || result.status !== null ? result.body : null,
    };
    // One line per attempt: failures at info (what an operator looks for), successes at debug (the bulk). The
    // destination's host only, never its path or query (they may carry the customer's tokens), nor response bodies.
    const attemptFields = { eventId: row.id, host, status: result.status, ms: Math.round(result.durationMs), attempt: attempts };
    if (result.ok) this.log.debug("delivery attempt", attemptFields);
    else {
      this.log.info("delivery attempt failed", {
        ...attemptFields,
        error: label,
        // Without an HTTP answer the body is the sender's own reason ("connection refused", "TLS error: …").
        ...(result.status === null ? { reason: result.body } : {}),
      });
    }
    let outcome: Outcome;
    if (result.ok) {
      outcome = { id: row.id, prevAttempts: row.attempts, cycle: row.cycle, status: "delivered", attempts, delivered: true, responseStatus: result.status, responseBody: result.body, nextAttemptAt: null, attempt };
    } else if (isExhausted(this.o.retrySchedule, attempts)) {
      outcome = { id: row.id, prevAttempts: row.attempts, cycle: row.cycle, status: "failed", attempts, delivered: false, responseStatus: result.status, responseBody: result.body, nextAttemptAt: null, attempt };
    } else {
      const delay = nextDelay(this.o.retrySchedule, attempts, result.retryAfterMs, this.o.random);
      outcome = { id: row.id, prevAttempts: row.attempts, cycle: row.cycle, status: "pending", attempts, delivered: false, responseStatus: result.status, responseBody: result.body, nextAttemptAt: new Date(Date.now() + delay), attempt };
    }
    this.pending.push({ outcome, host });
    this.recording.set(row.id, w.leaseUntil);
    if (this.pending.length >= this.o.flushSize) void this.flush();
    else this.flushTimer ??= setTimeout(() => void this.flush(), this.o.flushMs);
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

  private async write(batch: { outcome: Outcome; host: string }[]): Promise<void> {
    let applied: Set<string> | undefined;
    try {
      applied = await this.store.recordOutcomes(batch.map((b) => b.outcome));
    } catch (err) {
      // Nothing is lost: the leases expire and the events are attempted again (at least once).
      this.log.error("recording delivery outcomes failed", { err, count: batch.length });
    }
    // Written (or given up): a claim may take these events again, and their leases are no longer kept alive.
    const again: ScheduleEntry[] = [];
    for (const { outcome } of batch) {
      this.recording.delete(outcome.id);
      if (this.claimedAgain.delete(outcome.id) && applied && !applied.has(outcome.id)) again.push({ id: outcome.id, dueMs: Date.now() });
    }
    if (!applied) return;
    try {
      const finished: string[] = [];
      for (const { outcome } of batch) {
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

  /** Rebuilds the schedule from PostgreSQL when Redis lost it (restart without persistence, FLUSHDB). */
  private async maybeRebuild(): Promise<void> {
    const now = Date.now();
    if (now - this.lastRebuildCheck < this.o.rebuildCheckMs) return;
    this.lastRebuildCheck = now;
    if (await this.schedule.isBuilt()) return;
    await this.rebuild();
  }

  async rebuild(): Promise<number> {
    if (!(await this.schedule.tryLock("rebuild", 60_000))) return 0;
    try {
      let after = "";
      let added = 0;
      for (;;) {
        const page = await this.store.pendingPage(after, 5_000);
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

  /** One reconciliation pass (reconcile.ts); a pass still running is joined rather than doubled. */
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
   * One held check: held events whose subscription is active again go back into the schedule; a deleted one's are
   * removed. Every subscription holding events is looked at, page by page; a check still running is joined.
   */
  resumeHeld(): Promise<void> {
    this.holdCheck ??= this.checkHeld().finally(() => {
      this.holdCheck = undefined;
    });
    return this.holdCheck;
  }

  private async checkHeld(): Promise<void> {
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
    if (released > 0) this.wake();
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
      const ids = await this.store.heldEventIds(active, 5_000);
      if (ids.length === 0) break;
      const now = Date.now();
      await this.schedule.reserve(ids, now + this.leaseMs);
      const released = await this.store.unhold(ids, new Date(now));
      await this.schedule.moveToDue(released.map((id) => ({ id, dueMs: now })));
      count += released.length;
      if (ids.length < 5_000) break;
    }
    return count;
  }
}

/** Adds `delta` to a counter of the map, dropping it at zero. */
function count(map: Map<string, number>, name: string, delta: number): void {
  const n = (map.get(name) ?? 0) + delta;
  if (n <= 0) map.delete(name);
  else map.set(name, n);
}
