// The HTTP face every service shares: /healthz, /readyz, /metrics, then its own handler (RPC or API).
import type { Server } from "bun";
import { Registry, collectDefaultMetrics } from "prom-client";
import { orAfter } from "./timing.ts";

/** One Prometheus registry per process: in single-process mode every service's metrics show on every /metrics. */
export const metrics = new Registry();
collectDefaultMetrics({ register: metrics });

/** Named dependency checks, each resolving true when the dependency answers. */
export type ReadinessChecks = Record<string, () => Promise<boolean>>;

/**
 * What /readyz asks. A service is ready when it can do its own job: `checks` are what that job cannot go without
 * (/readyz is 200 only when every one passes); `informational` ones are dependencies it rides out (the gateway
 * without Redis rate-limits open, the deliverer without the registry keeps delivering), reported beside them so an
 * operator sees them, but never a reason to take the pod out of rotation — an outage of one service must not empty
 * every other service's endpoints.
 */
export interface Readiness {
  checks: ReadinessChecks;
  informational?: ReadinessChecks;
}

export interface ReadinessReport {
  status: "ready" | "not_ready";
  checks: Record<string, boolean>;
  informational: Record<string, boolean>;
}

const CHECK_TIMEOUT_MS = 2_000;

async function runChecks(checks: ReadinessChecks): Promise<Record<string, boolean>> {
  const entries = await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      const ok = await orAfter(check().catch(() => false), CHECK_TIMEOUT_MS, false);
      return [name, ok] as const;
    }),
  );
  return Object.fromEntries(entries);
}

async function runReadiness(readiness: Readiness): Promise<ReadinessReport> {
  const [checks, informational] = await Promise.all([runChecks(readiness.checks), runChecks(readiness.informational ?? {})]);
  return { status: Object.values(checks).every(Boolean) ? "ready" : "not_ready", checks, informational };
}

/** Answers the three operational endpoints; undefined for any other path. */
export async function operationalResponse(req: Request, readiness: Readiness): Promise<Response | undefined> {
  if (req.method !== "GET" && req.method !== "HEAD") return undefined;
  const path = new URL(req.url).pathname;
  if (path === "/healthz") return Response.json({ status: "ok" });
  if (path === "/readyz") {
    const report = await runReadiness(readiness);
    return Response.json(report, { status: report.status === "ready" ? 200 : 503 });
  }
  if (path === "/metrics") {
    return new Response(await metrics.metrics(), { headers: { "content-type": metrics.contentType } });
  }
  return undefined;
}

export interface ServiceHttpOptions {
  port: number;
  /** The address to bind (BIND_HOST). */
  hostname: string;
  readiness: Readiness;
  /** The service's own handler, given the caller's address; undefined means 404. */
  handle?: (req: Request, peer: string | undefined) => Promise<Response> | Response | undefined;
  /** PEM certificate and key: HTTPS instead of HTTP (INTERNAL_TLS_CERT_FILE / INTERNAL_TLS_KEY_FILE). */
  tls?: { cert: string; key: string };
}

/** Serves an internal service (registry, deliverer, matcher) over HTTP/1.1 (or HTTPS with `tls`) with keep-alive. */
export function serveServiceHttp(opts: ServiceHttpOptions): Server<undefined> {
  return Bun.serve({
    port: opts.port,
    hostname: opts.hostname,
    ...(opts.tls ? { tls: opts.tls } : {}),
    async fetch(req, server) {
      const own = await opts.handle?.(req, server.requestIP(req)?.address);
      if (own) return own;
      return (await operationalResponse(req, opts.readiness)) ?? Response.json({ error: "not_found" }, { status: 404 });
    },
  });
}
