// The registry's Prometheus metrics (on the process-wide registry that /metrics serves): RPCs by method and outcome,
// their latency, idempotent replays, and store calls refused because PostgreSQL was unavailable.
import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { Counter, Histogram } from "prom-client";
import { ApiError } from "../common/contract/index.ts";
import { metrics } from "../common/http-service.ts";

const rpcCalls = new Counter({
  name: "registry_rpc_calls_total",
  help: "Registry RPCs by method and outcome (ok, the public error code, or error for anything unexpected).",
  labelNames: ["method", "outcome"] as const,
  registers: [metrics],
});

const rpcDuration = new Histogram({
  name: "registry_rpc_duration_seconds",
  help: "Time the registry spent in each RPC handler.",
  labelNames: ["method"] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [metrics],
});

export const idempotentReplays = new Counter({
  name: "registry_idempotent_replays_total",
  help: "Requests answered with a stored response because their Idempotency-Key had already succeeded.",
  registers: [metrics],
});

export const databaseUnavailable = new Counter({
  name: "registry_database_unavailable_total",
  help: "Store calls answered 503 because PostgreSQL was down, refused or did not answer in time.",
  registers: [metrics],
});

export const unreadableTargets = new Counter({
  name: "registry_unreadable_targets_total",
  help: "Delivery targets answered held because a stored value would not decrypt (field: secret, previous_secret, broker_url): a damaged row or another APP_SECRET.",
  labelNames: ["field"] as const,
  registers: [metrics],
});

export const indexBehind = new Counter({
  name: "registry_watch_index_repairs_total",
  help:
    "Watch index shards found holding less than PostgreSQL, by chain and repair: replay (lacked applied changes: a " +
    "failover to a lagging replica), rebuild (those changes were past the outbox retention).",
  labelNames: ["chain", "repair"] as const,
  registers: [metrics],
});

/** Wraps every method of a service implementation with the call counter and the latency histogram. */
export function instrument<S extends DescService>(impl: ServiceImpl<S>): ServiceImpl<S> {
  const out: Record<string, unknown> = {};
  for (const [method, fn] of Object.entries(impl as Record<string, (req: unknown, ctx: unknown) => unknown>)) {
    // Label children bound once per method: prom-client otherwise validates and hashes the label object on every
    // observation, a visible share of a GetSubscription's CPU (bench api).
    const time = rpcDuration.labels(method);
    const ok = rpcCalls.labels(method, "ok");
    out[method] = async (req: unknown, ctx: unknown) => {
      const started = performance.now();
      try {
        const res = await fn(req, ctx);
        ok.inc();
        return res;
      } catch (err) {
        rpcCalls.inc({ method, outcome: err instanceof ApiError ? err.code : "error" });
        throw err;
      } finally {
        time.observe((performance.now() - started) / 1000);
      }
    };
  }
  return out as ServiceImpl<S>;
}
