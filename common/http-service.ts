// The HTTP face every service shares: /healthz, /readyz, /metrics, then its own handler (RPC or API).
import type { Server } from "bun";
import { Registry, collectDefaultMetrics } from "prom-client";

/** One Prometheus registry per process: in single-process mode every service's metrics show on every /metrics. */
export const metrics = new Registry();
collectDefaultMetrics({ register: metrics });

/** Named dependency checks; /readyz is 200 only when every one resolves true. */
export type ReadinessChecks = Record<string, () => Promise<boolean>>;

const CHECK_TIMEOUT_MS = 2_000;

export async function runReadiness(checks: ReadinessChecks): Promise<{ ok: boolean; checks: Record<string, boolean> }> {
  const entries = await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      const timeout = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), CHECK_TIMEOUT_MS));
      const ok = await Promise.race([check().catch(() => false), timeout]);
      return [name, ok] as const;
    }),
  );
  const result = Object.fromEntries(entries);
  return { ok: entries.every(([, ok]) => ok), checks: result };
}

/** Answers the three operational endpoints; undefined for any other path. */
export async function operationalResponse(req: Request, checks: ReadinessChecks): Promise<Response | undefined> {
  if (req.method !== "GET" && req.method !== "HEAD") return undefined;
  const path = new URL(req.url).pathname;
  if (path === "/healthz") return Response.json({ status: "ok" });
  if (path === "/readyz") {
    const r = await runReadiness(checks);
    return Response.json({ status: r.ok ? "ready" : "not_ready", checks: r.checks }, { status: r.ok ? 200 : 503 });
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
  checks: ReadinessChecks;
  /** The service's own handler, given the caller's address; undefined means 404. */
  handle?: (req: Request, peer: string | undefined) => Promise<Response> | Response | undefined;
}

/** Serves an internal service (registry, deliverer, matcher) over HTTP/1.1 with keep-alive. */
export function serveServiceHttp(opts: ServiceHttpOptions): Server<undefined> {
  return Bun.serve({
    port: opts.port,
    hostname: opts.hostname,
    async fetch(req, server) {
      const own = await opts.handle?.(req, server.requestIP(req)?.address);
      if (own) return own;
      return (await operationalResponse(req, opts.checks)) ?? Response.json({ error: "not_found" }, { status: 404 });
    },
  });
}
