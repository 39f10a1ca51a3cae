// The recent pace of each destination host (and of each key's queue), and what follows from it: how many of its
// claimed events may wait for its slots (waitCap), and how far an event that found a queue full goes back in the
// schedule (deferral).
import { KEY_DEFER_UNKNOWN_MS, PACE_MAX, PACE_WEIGHT, WAIT_ROUNDS_MAX, WAIT_ROUNDS_UNKNOWN } from "./defaults.ts";
import { MemoMap } from "../../common/timing.ts";

/** The waiting queue of events held back by their key's cap (host names never hold a space). */
export function keyQueue(keyId: string): string {
  return `key ${keyId}`;
}

export class Pacing {
  /** Per host, a moving average of attempt time in ms (unknown until its first attempt ends). */
  // Only a pacing hint: forgetting every host now and then bounds the map where destinations churn.
  private readonly hostMs = new MemoMap<string, number>(PACE_MAX);
  /** Per key at its cap, when the next of its events handed back comes due (deferral). */
  private readonly keyHorizon = new Map<string, number>();

  constructor(private readonly o: { timeoutMs: number; deferMs: number }) {}

  /**
   * Events allowed to wait for a host's slots: as many as its slots can start in about one delivery timeout at its
   * recent pace (so a fast host keeps a deep queue), never fewer than one round of slots nor more than
   * WAIT_ROUNDS_MAX. A host whose pace is not known yet (none of its attempts in this process has ended) may queue
   * WAIT_ROUNDS_UNKNOWN: a process starting on a backlog for one destination claims a round for its slots and then
   * another, and with room for one only, that second claim went back to the schedule whole (ADR 0009).
   */
  waitCap(host: string, slots: number): number {
    const ms = this.hostMs.get(host);
    const rounds = ms === undefined ? WAIT_ROUNDS_UNKNOWN : Math.min(WAIT_ROUNDS_MAX, Math.max(1, Math.floor(this.o.timeoutMs / Math.max(ms, 1))));
    return slots * rounds;
  }

  /** Folds an attempt's time into the recent pace of a host (or of a key's queue): waitCap follows it. */
  pace(name: string, durationMs: number): void {
    const prevMs = this.hostMs.get(name);
    this.hostMs.set(name, prevMs === undefined ? durationMs : prevMs + (durationMs - prevMs) * PACE_WEIGHT);
  }

  /**
   * How far an event that found a queue full goes back in the schedule: a host's, a moment (deferMs). A key's, spread
   * over the key's coming rounds at the rate its cap lets them run: the first a round from now (the recent pace of its
   * attempts, KEY_DEFER_UNKNOWN_MS before any has ended here, within [deferMs, the attempt timeout]), each next one a
   * slot's share of a round later. Handed back every deferMs instead, a key's deep backlog behind a slow destination
   * came due again and again ahead of the other keys' new events, and the claims spent themselves loading it.
   */
  deferral(full: "host" | "key", key: string | undefined, keySlots: number): number {
    if (full === "host") return this.o.deferMs;
    const now = Date.now();
    const round = Math.min(this.o.timeoutMs, Math.max(this.o.deferMs, this.hostMs.get(keyQueue(key!)) ?? KEY_DEFER_UNKNOWN_MS));
    const due = Math.max(this.keyHorizon.get(key!) ?? 0, now + round);
    if (!this.keyHorizon.has(key!) && this.keyHorizon.size >= PACE_MAX) {
      for (const [k, t] of this.keyHorizon) if (t < now) this.keyHorizon.delete(k);
    }
    this.keyHorizon.set(key!, due + round / keySlots);
    return due - now;
  }
}
