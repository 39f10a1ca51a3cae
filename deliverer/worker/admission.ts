// Who may start now: attempts in flight are bounded per process, per destination host and, for HTTPS, per API key
// over all its hosts. An event whose host or key is at its limit waits in that limit's queue (up to waitCap) or goes
// back to the schedule for a moment, so one slow or dead destination, or one customer with many, cannot starve the
// others. An event still waiting when its lease could no longer cover an attempt goes back instead of being sent.
import type { DeliveryTarget } from "../../gen/webhooks/registry/v1/registry_pb.ts";
import type { ScheduleEntry } from "../schedule.ts";
import type { ClaimedEvent } from "../db/types.ts";
import { queueTarget } from "../senders.ts";
import { waitingReleased } from "../metrics.ts";
import { keyQueue, type Pacing } from "./pacing.ts";
import type { ResolvedOptions } from "./defaults.ts";

export interface Waiting {
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

/** What admission asks of the worker around it. */
export interface AdmissionHooks {
  /** Runs an admitted event's attempt. */
  attempt(w: Waiting): Promise<void>;
  /** Whether the worker still runs (after stop, waiting events go back instead of starting). */
  running(): boolean;
  /** An attempt ended (its slot is free). */
  ended(): void;
  /** Puts claimed events back in the schedule. */
  giveBack(entries: ScheduleEntry[]): Promise<void>;
}

type Limits = Pick<ResolvedOptions, "concurrency" | "perHostConcurrency" | "queuePerDestinationConcurrency" | "keyConcurrency">;

export class Admission {
  /** Attempts in flight in this process, by event id. */
  readonly inflight = new Map<string, Promise<void>>();
  private readonly perHost = new Map<string, number>();
  /** HTTPS attempts in flight per API key. */
  private readonly perKey = new Map<string, number>();
  // Claimed events whose host is at its limit wait here for one of its slots (and those whose key is at its cap, in
  // the key's queue, keyQueue()). How many may wait follows the host's recent attempt time (Pacing.waitCap): a fast
  // host keeps a deep queue, so the loop is not claiming, loading and handing back the same events while its slots
  // turn over; a slow or dead one keeps one round of attempts.
  private readonly waiting = new Map<string, Waiting[]>();
  private waitingCount = 0;
  // Claimed events whose destination has a free slot while the process has none (the prefetched round), in claim
  // order. They start as attempts end, ahead of anything claimed later.
  private readonly ready: Waiting[] = [];

  constructor(
    private readonly o: Limits,
    private readonly pacing: Pacing,
    private readonly hooks: AdmissionHooks,
  ) {}

  /** Events waiting for a destination's slots. */
  get waitingSize(): number {
    return this.waitingCount;
  }

  /** Events waiting for the process's slots. */
  get readySize(): number {
    return this.ready.length;
  }

  /** Admits a newly claimed event: behind the ready ones if any wait, else placed. Returns which queue was full. */
  admit(w: Waiting): "host" | "key" | undefined {
    if (this.ready.length > 0) {
      this.ready.push(w);
      return undefined;
    }
    return this.place(w);
  }

  /**
   * Whether this process holds an event already, as things stand now: its attempt running, or the event claimed and
   * waiting to start.
   */
  holding(): (id: string) => boolean {
    const unstarted = this.waitingCount + this.ready.length > 0 ? new Set(this.unstarted().map((w) => w.row.id)) : undefined;
    return (id) => this.inflight.has(id) || unstarted?.has(id) === true;
  }

  /** Takes every event claimed and not started (at stop): they go back to the schedule. */
  takeUnstarted(): Waiting[] {
    const all = this.unstarted();
    this.waiting.clear();
    this.waitingCount = 0;
    this.ready.length = 0;
    return all;
  }

  /** The key whose cap an event's attempt counts against, and that cap: HTTPS destinations only. */
  keyOf(target: DeliveryTarget): Pick<Waiting, "key" | "keySlots"> {
    if (queueTarget(target)) return { key: undefined, keySlots: 0 };
    return { key: target.keyId, keySlots: Math.max(1, target.keyDeliveriesQuota ?? this.o.keyConcurrency) };
  }

  /** Starts ready events while the process has slots; any whose lease could no longer cover an attempt go back. */
  startReady(): void {
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
        if (refused) back.push({ id: w.row.id, dueMs: now + this.pacing.deferral(refused, w.key, w.keySlots) });
      }
    }
    // Spliced in place, not copied: usually one event is taken.
    if (taken > 0) this.ready.splice(0, taken);
    this.release(expired, now);
    if (back.length > 0) void this.hooks.giveBack(back);
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

  private hostSlots(w: Waiting): number {
    return queueTarget(w.target) ? this.o.queuePerDestinationConcurrency : this.o.perHostConcurrency;
  }

  private keyHasRoom(w: Waiting): boolean {
    return w.key === undefined || (this.perKey.get(w.key) ?? 0) < w.keySlots;
  }

  /** Queues an event for a slot of `name` (a host, or a key's queue); false when that queue is full. */
  private enqueue(name: string, w: Waiting, slots: number): boolean {
    const queue = this.waiting.get(name) ?? [];
    if (queue.length >= this.pacing.waitCap(name, slots)) return false;
    queue.push(w);
    this.waiting.set(name, queue);
    this.waitingCount++;
    return true;
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
    const p = this.hooks.attempt(w).finally(() => {
      this.inflight.delete(row.id);
      count(this.perHost, host, -1);
      if (w.key !== undefined) count(this.perKey, w.key, -1);
      this.refill(w);
      if (this.hooks.running()) this.startReady();
      this.hooks.ended();
    });
    this.inflight.set(row.id, p);
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
        if (!this.hooks.running()) back.push({ id: next.row.id, dueMs: now });
        else {
          const refused = this.place(next);
          if (refused) back.push({ id: next.row.id, dueMs: now + this.pacing.deferral(refused, next.key, next.keySlots) });
        }
      }
    };
    pump(ended.host, () => (this.perHost.get(ended.host) ?? 0) < this.hostSlots(ended));
    if (ended.key !== undefined) pump(keyQueue(ended.key), () => this.keyHasRoom(ended));
    if (back.length > 0) void this.hooks.giveBack(back);
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

  /**
   * Claimed events whose lease could no longer cover an attempt go back to the schedule; one whose lease has ended
   * already is left as it is (another worker may have claimed it since: moving it would take its claim away).
   */
  private release(expired: Waiting[], now: number): void {
    if (expired.length === 0) return;
    waitingReleased.inc(expired.length);
    const back = expired.filter((w) => w.leaseUntil > now).map((w) => ({ id: w.row.id, dueMs: now }));
    if (back.length > 0) void this.hooks.giveBack(back);
  }
}

/** Adds `delta` to a counter of the map, dropping it at zero. */
function count(map: Map<string, number>, name: string, delta: number): void {
  const n = (map.get(name) ?? 0) + delta;
  if (n <= 0) map.delete(name);
  else map.set(name, n);
}
