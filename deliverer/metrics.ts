// The deliverer's Prometheus metrics, registered once per process on the shared registry (several deliverers in
// one test process share them; the queue gauges ask every live schedule).
import { Counter, Gauge, Histogram } from "prom-client";
import { metrics } from "../common/http-service.ts";
import type { Schedule } from "./schedule.ts";

const schedules = new Set<Schedule>();

export function watchSchedule(s: Schedule): () => void {
  schedules.add(s);
  return () => schedules.delete(s);
}

async function totals() {
  let due = 0;
  let leased = 0;
  let oldest: number | null = null;
  for (const s of schedules) {
    const st = await s.stats().catch(() => null);
    if (!st) continue;
    due += st.due;
    leased += st.leased;
    if (st.oldestDueMs !== null && (oldest === null || st.oldestDueMs < oldest)) oldest = st.oldestDueMs;
  }
  return { due, leased, oldest };
}

export const queueDepth = new Gauge({
  name: "deliverer_queue_depth",
  help: "Events in the Redis schedule: due (waiting, incl. not yet due) and leased (being attempted).",
  labelNames: ["state"] as const,
  registers: [metrics],
  async collect() {
    const t = await totals();
    this.set({ state: "scheduled" }, t.due);
    this.set({ state: "leased" }, t.leased);
  },
});

export const dueUnclaimedAge = new Gauge({
  name: "deliverer_due_unclaimed_age_seconds",
  help: "How long the oldest due event has waited to be claimed (0 when nothing is overdue).",
  registers: [metrics],
  async collect() {
    const t = await totals();
    this.set(t.oldest === null ? 0 : Math.max(0, (Date.now() - t.oldest) / 1000));
  },
});

export const deliveryLatency = new Histogram({
  name: "deliverer_attempt_duration_seconds",
  help: "Duration of delivery attempts (resolve, connect, TLS, request, response up to 4 KiB).",
  labelNames: ["result"] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
  registers: [metrics],
});

export const attemptsTotal = new Counter({
  name: "deliverer_attempts_total",
  help: "Delivery attempts by result (success, http, timeout, connect, tls, ssrf, dns).",
  labelNames: ["result"] as const,
  registers: [metrics],
});

export const destinationFailures = new Counter({
  name: "deliverer_destination_failures_total",
  help: "Failed attempts per destination host and reason.",
  labelNames: ["host", "reason"] as const,
  registers: [metrics],
});

export const eventsFinished = new Counter({
  name: "deliverer_events_finished_total",
  help: "Events that left the schedule: delivered or failed (retries exhausted).",
  labelNames: ["status"] as const,
  registers: [metrics],
});

export const leasesReclaimed = new Counter({
  name: "deliverer_leases_reclaimed_total",
  help: "Claims whose lease expired (a worker died or stalled) and were taken back.",
  registers: [metrics],
});

export const connectionResends = new Counter({
  name: "deliverer_connection_resends_total",
  help: "HTTPS requests sent again at once on a new connection because the kept-alive one they went out on was closed or reset before any answer.",
  registers: [metrics],
});

export const waitingReleased = new Counter({
  name: "deliverer_waiting_released_total",
  help: "Claimed events that waited (for a busy host, or for a slot of the process) until their lease could no longer cover an attempt, and went back to the schedule.",
  registers: [metrics],
});

export const scheduleRebuilds = new Counter({
  name: "deliverer_schedule_rebuilds_total",
  help: "Rebuilds of the Redis schedule from pending events in PostgreSQL.",
  registers: [metrics],
});

export const scheduleRepaired = new Counter({
  name: "deliverer_schedule_repaired_total",
  help: "Pending events found overdue in PostgreSQL but in no due or lease set of the Redis schedule (entries lost while the schedule's built marker survived: eviction, a deleted key), and put back.",
  registers: [metrics],
});

export const eventsHeld = new Counter({
  name: "deliverer_events_held_total",
  help: "Pending events put on hold instead of being attempted, by reason (subscription_disabled, key_revoked, secret_unreadable); they resume when the target can be used again.",
  labelNames: ["reason"] as const,
  registers: [metrics],
});

export const heldSubscriptions = new Gauge({
  name: "deliverer_held_subscriptions",
  help: "Subscriptions with held events at the last held check, by reason (secret_unreadable: a stored secret that will not decrypt, which needs an operator or a rotation).",
  labelNames: ["reason"] as const,
  registers: [metrics],
});
