// Request counters and latency per route pattern (never the raw path: ids would explode the label space).
import { Counter, Histogram } from "prom-client";
import { metrics } from "../common/http-service.ts";

const requests = new Counter({
  name: "gateway_http_requests_total",
  help: "HTTP requests answered by the gateway, by method, route pattern and status.",
  labelNames: ["method", "route", "status"] as const,
  registers: [metrics],
});

const duration = new Histogram({
  name: "gateway_http_request_duration_seconds",
  help: "Time from request arrival to response, by method and route pattern.",
  labelNames: ["method", "route"] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [metrics],
});

const rateLimitFailOpen = new Counter({
  name: "gateway_rate_limit_fail_open_total",
  help: "Requests let through unlimited because Redis did not answer the rate limiter.",
  registers: [metrics],
});

// Label children cached by their values: prom-client otherwise hashes the label object on every observation.
// Bounded by the route patterns, methods and statuses the gateway answers with.
const children = new Map<string, { count: { inc(): void }; time: { observe(v: number): void } }>();

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

export function observeRequest(rawMethod: string, route: string, status: number, seconds: number): void {
  // A client picks the method: anything unusual shares one label value.
  const method = METHODS.has(rawMethod) ? rawMethod : "OTHER";
  const key = `${method} ${route} ${status}`;
  let child = children.get(key);
  if (!child) {
    child = { count: requests.labels(method, route, String(status)), time: duration.labels(method, route) };
    children.set(key, child);
  }
  child.count.inc();
  child.time.observe(seconds);
}

export function countRateLimitFailOpen(): void {
  rateLimitFailOpen.inc();
}
