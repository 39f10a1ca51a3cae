// The delivery worker's options and every tuned default, each with the reason for its value. Figures behind the
// measured ones are in docs/adr/0009-worker-defaults.md.
import type { Logger } from "../../common/logger.ts";
import { QUOTA_DEFAULTS } from "../../common/quotas.ts";

export interface WorkerOptions {
  /** Delays before each automatic attempt (RETRY_SCHEDULE); its length is the number of attempts. */
  retrySchedule: number[];
  /** Total time of one attempt (DELIVERY_TIMEOUT_MS). */
  timeoutMs: number;
  /** Attempts in flight in this process. */
  concurrency?: number;
  /**
   * Events claimed and loaded beyond the process's free attempt slots, started as slots free: the next round is at
   * hand when the current one is acknowledged, instead of the slots sitting empty through a claim and its row load.
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
   * a broker the operator registered is built for many unconfirmed publishes on one channel / connection.
   */
  queuePerDestinationConcurrency?: number;
  /** Most events claimed per round. */
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
   * How often overdue pending events are checked for entries Redis lost one by one (jobs/schedule-reconcile.ts).
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
   * Writes of outcomes running at once. Outcomes that end while a write runs collect into the next one, so one write
   * at a time still keeps up, in fewer and larger statements.
   */
  flushConcurrency?: number;
  /** Most outcomes in one write. */
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

/** The options with every default filled in. */
export type ResolvedOptions = Required<Omit<WorkerOptions, "logger" | "leaseMs">>;

/** The defaults of WorkerOptions that do not follow from other options. */
export const WORKER_DEFAULTS = {
  // Enough attempts in flight to keep slow endpoints from idling the process, few enough for its memory.
  concurrency: 512,
  // One round beyond the slots: the next one is loaded while the current one is acknowledged (ADR 0009).
  prefetch: 512,
  // A share of the process small enough that one slow host cannot take it all.
  perHostConcurrency: 32,
  // The window of the bare publish loops in `bench delivery-queues`; 128 left a subject's slots idle (ADR 0009).
  queuePerDestinationConcurrency: 256,
  // Two claims fit the budgets of attempts and waiting places together; 512 overflowed one host's queue (ADR 0009).
  claimBatch: 256,
  // Idle claims cost a script on every schedule shard; wake() covers new events sooner.
  pollMs: 50,
  // A moment for a full host's slots to turn over before its events come due again.
  deferMs: 250,
  // A re-enabled subscription resumes within seconds without a registry look-up per claim.
  holdCheckMs: 2_000,
  // A lost schedule is noticed within a second; the check is one Redis read.
  rebuildCheckMs: 1_000,
  // A safety net only: it bounds how long an event whose entry Redis lost waits.
  reconcileMs: 30_000,
  // One pass stays a bounded index range; the next continues after it.
  reconcileLimit: 20_000,
  // A write per claim round's worth of outcomes at most.
  flushSize: 256,
  // Outcomes wait at most this long for company; nothing beside a delivery's latency.
  flushMs: 20,
  // One write at a time collects more per statement and costs PostgreSQL less per outcome (ADR 0006).
  flushConcurrency: 1,
  // A statement PostgreSQL writes in well under a lease's margin.
  flushMax: 2_000,
} as const;

// Claims loaded and dispatched at once: the next claim and its row load run while the current batch is sent (ADR 0009).
export const CLAIMS_IN_FLIGHT = 2;
// What the default lease adds to two attempt timeouts, so a live worker never loses a claim mid-request.
export const LEASE_EXTRA_MS = 10_000;
// Time kept at the end of a lease for writing an attempt's outcome; unwritten leases are looked at twice within it.
export const LEASE_MARGIN_MS = 5_000;
// wake() claims this long after its first call, so events scheduled meanwhile share one claim (ADR 0009).
export const WAKE_COALESCE_MS = 5;
// Subscriptions the held check looks up in the registry at once (one page of heldSubscriptions).
export const HELD_PAGE = 500;
// Held events resumed per statement, and pending events per page of a schedule rebuild: short statements.
export const EVENT_PAGE = 5_000;
// How far an event whose key is at its cap goes back before any of the key's attempts has ended here.
export const KEY_DEFER_UNKNOWN_MS = 1_000;
// Rounds of slots a host of unknown pace may queue: a second claim on a backlog is not handed back whole (ADR 0009).
export const WAIT_ROUNDS_UNKNOWN = 2;
// Most rounds of slots a fast host may queue: a bound on what one host holds claimed.
export const WAIT_ROUNDS_MAX = 16;
// Weight of an attempt's time in a host's moving average: a few attempts move the pace, one does not.
export const PACE_WEIGHT = 0.2;
// Hosts (and keys) whose pace or deferral horizon is remembered: a hint, bounded where destinations churn.
export const PACE_MAX = 10_000;
// A row due this much later than its schedule entry says counts as rescheduled (clock skew between the two).
export const DUE_SLACK_MS = 1_000;
// Claims given back after a failed load come due this much later, not in a tight loop against a failing store.
export const RETRY_LOAD_MS = 1_000;
// The claim loop's pause after an unexpected error.
export const ERROR_PAUSE_MS = 500;
// A schedule rebuild's lock: longer than a rebuild of a large backlog takes.
export const REBUILD_LOCK_MS = 60_000;

/** Fills in the defaults; the lease and the backlog follow from other options. */
export function resolveOptions(opts: WorkerOptions, leaseMs: number): ResolvedOptions {
  const d = WORKER_DEFAULTS;
  const concurrency = opts.concurrency ?? d.concurrency;
  const prefetch = opts.prefetch ?? d.prefetch;
  const flushMax = opts.flushMax ?? d.flushMax;
  return {
    retrySchedule: opts.retrySchedule,
    timeoutMs: opts.timeoutMs,
    concurrency,
    prefetch,
    perHostConcurrency: opts.perHostConcurrency ?? d.perHostConcurrency,
    keyConcurrency: opts.keyConcurrency ?? QUOTA_DEFAULTS.deliveries.value,
    queuePerDestinationConcurrency: opts.queuePerDestinationConcurrency ?? d.queuePerDestinationConcurrency,
    claimBatch: opts.claimBatch ?? d.claimBatch,
    pollMs: opts.pollMs ?? d.pollMs,
    deferMs: opts.deferMs ?? d.deferMs,
    holdCheckMs: opts.holdCheckMs ?? d.holdCheckMs,
    rebuildCheckMs: opts.rebuildCheckMs ?? d.rebuildCheckMs,
    reconcileMs: opts.reconcileMs ?? d.reconcileMs,
    reconcileGraceMs: opts.reconcileGraceMs ?? leaseMs,
    reconcileLimit: opts.reconcileLimit ?? d.reconcileLimit,
    flushSize: opts.flushSize ?? d.flushSize,
    flushMs: opts.flushMs ?? d.flushMs,
    flushConcurrency: opts.flushConcurrency ?? d.flushConcurrency,
    flushMax,
    outcomeBacklog: opts.outcomeBacklog ?? 2 * flushMax + 2 * concurrency + prefetch,
    random: opts.random ?? Math.random,
  };
}

/** The lease of a claim and the margin kept at its end for writing the outcome. */
export function leaseOf(opts: WorkerOptions): { leaseMs: number; leaseMarginMs: number } {
  const leaseMs = opts.leaseMs ?? opts.timeoutMs * 2 + LEASE_EXTRA_MS;
  // The default lease always leaves the whole margin; a short one, half of what it leaves beyond an attempt.
  const leaseMarginMs = Math.min(LEASE_MARGIN_MS, Math.floor((leaseMs - opts.timeoutMs) / 2));
  if (leaseMarginMs <= 0) throw new Error("the lease must outlast an attempt and the margin for writing its outcome");
  return { leaseMs, leaseMarginMs };
}
