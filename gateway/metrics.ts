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

export function observeRequest(method: string, route: string, status: number, seconds: number): void {
  requests.inc({ method, route, status: String(status) });
  duration.observe({ method, route }, seconds);
}

export function countRateLimitFailOpen(): void {
  rateLimitFailOpen.inc();
}
