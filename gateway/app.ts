// The public HTTP API. Order of work per request, cheapest and most telling first: request id → (under /v1)
// authentication (a lookup of an unknown key limited per client address first) → rate limit → body (size, media type, JSON) → schema → route → RPC. Each operation's file is one
// Elysia plugin (gateway/routes/); this file wires them and the cross-cutting hooks.
import type { Transport } from "@connectrpc/connect";
import { Elysia, t, ValidationError, type AnyElysia } from "elysia";
import type { Config } from "../common/config.ts";
import { ApiError, internalError, invalidRequest, MAX_TARGET_LENGTH, notFound } from "../common/contract/index.ts";
import { operationalResponse } from "../common/http-service.ts";
import { log } from "../common/logger.ts";
import { openRedis, type Redis } from "../common/redis.ts";
import { createAuthenticator, UNAUTHORIZED_HEADERS } from "./auth.ts";
import { clientKey, createClientLimiter } from "./client-limit.ts";
import { parseJsonBody } from "./body.ts";
import { beginRequest, pathOf, requestIdOf, stateOf, targetLength } from "./context.ts";
import { createDeps } from "./deps.ts";
import { consolePlugin } from "./console.ts";
import { docsPlugin } from "./docs.ts";
import { createMethodIndex, errorResponse, fromValidationError, methodNotAllowed } from "./errors.ts";
import { canonicalJson, IDEMPOTENCY_HEADER } from "./idempotency.ts";
import { countRateLimitFailOpen, observeRequest } from "./metrics.ts";
import { createRateLimiter, rateLimitHeaders } from "./rate-limit.ts";
import { requestCost } from "./request-cost.ts";
import { gatewayReadiness } from "./readiness.ts";
import { createRefusalPacer, type RefusalPacerOptions } from "./refusal-pace.ts";
import { pickRequestId, REQUEST_ID_HEADER } from "./request-id.ts";
import { apiRoutes } from "./routes/index.ts";

const gatewayLog = log.child({ service: "gateway" });

export interface GatewayOptions {
  config: Config;
  /** The registry (SubscriptionService, ApiKeyService): in-process or over the network. */
  registry: Transport;
  /** The deliverer (event routes); without it those routes answer 503 service_unavailable. */
  deliverer?: Transport;
  /** The rate limiter's Redis; opened from config.redisUrl (and closed on stop) when absent. */
  redis?: Redis;
  /** How long a resolved API key is trusted before asking the registry again (default 3 s). */
  authCacheMs?: number;
  /** Bounds of the refusals held until their Retry-After (default 256 per client address, 4,096 in all). */
  refusalsHeld?: RefusalPacerOptions;
  /** How long a request waits for the rate limiter's Redis before passing unlimited (default 250 ms). */
  rateLimitTimeoutMs?: number;
}

const ReadinessSchema = t.Object({
  status: t.Union([t.Literal("ready"), t.Literal("not_ready")]),
  checks: t.Record(t.String(), t.Boolean(), {
    description: "What the gateway cannot work without (authentication through the registry); ready when all pass.",
  }),
  informational: t.Record(t.String(), t.Boolean(), {
    description: "Dependencies the gateway rides out (Redis, the deliverer): shown, never a reason to be unready.",
  }),
});

/** Metrics and the access log of one answered request. */
function record(request: Request, route: string, status: number): void {
  const state = stateOf(request);
  const seconds = state ? (performance.now() - state.startedAt) / 1000 : 0;
  observeRequest(request.method, route, status, seconds);
  // The access log, one line per request at info. Ids and outcome only: never headers, query strings or bodies
  // (they carry keys and secrets).
  gatewayLog.info("request", {
    requestId: state?.requestId,
    method: request.method,
    route,
    status,
    ms: Math.round(seconds * 1000),
    keyId: state?.principal?.keyId,
  });
}

/**
 * Refused unknown-key requests held until their Retry-After, per client address and in all (refusal-pace.ts): one
 * client's 256 is more than a client's HTTP pool keeps in flight by default (Bun's fetch: 256).
 */
const REFUSALS_HELD: RefusalPacerOptions = { perClient: 256, total: 4_096 };

function isV1(path: string): boolean {
  return path === "/v1" || path.startsWith("/v1/");
}

/** WWW-Authenticate on 401; Retry-After on a lookup refused for the client's address. */
function authErrorHeaders(err: ApiError): Record<string, string> {
  if (err.code === "unauthorized") return { ...UNAUTHORIZED_HEADERS };
  const retry = (err.detail as { retryAfterSeconds?: unknown } | null)?.retryAfterSeconds;
  return err.code === "rate_limited" && typeof retry === "number" ? { "retry-after": String(retry) } : {};
}

function stringHeaders(headers: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = String(v);
  return out;
}

export function createGatewayApp(opts: GatewayOptions) {
  const { config } = opts;
  const ownsRedis = opts.redis === undefined;
  const redis = opts.redis ?? openRedis(config.redisUrl, { enableAutoPipelining: true });
  // Redis down is an expected state (the limiter fails open): say so now and then, not on every request.
  let lastRedisReport = 0;
  const reportRedis = (err: unknown) => {
    if (Date.now() - lastRedisReport < 10_000) return;
    lastRedisReport = Date.now();
    gatewayLog.warn("gateway Redis unavailable; rate limiting fails open", { err });
  };
  if (ownsRedis) redis.on("error", reportRedis);
  const deps = createDeps(config, opts.registry, opts.deliverer);
  const auth = createAuthenticator(opts.registry, {
    cacheMs: opts.authCacheMs,
    lookupLimiter: createClientLimiter({ rps: config.unknownKeyRateLimitRps, burst: config.unknownKeyRateLimitBurst }),
  });
  const pacer = createRefusalPacer(opts.refusalsHeld ?? REFUSALS_HELD);
  const limiter = createRateLimiter({
    redis,
    prefix: config.redisPrefix,
    rps: config.rateLimitRps,
    burst: config.rateLimitBurst,
    ...(opts.rateLimitTimeoutMs !== undefined ? { timeoutMs: opts.rateLimitTimeoutMs } : {}),
    onFailure: reportRedis,
  });
  const readiness = gatewayReadiness(opts.registry, opts.deliverer, redis);

  const operational = async (request: Request): Promise<Response> => {
    const res = await operationalResponse(request, readiness);
    if (!res) throw notFound();
    return res;
  };

  // normalize: false — request objects are validated as sent (unknown fields pass through schemas built with
  // InputObject and are ignored by the mapping), never silently rewritten before validation.
  const app = new Elysia({ name: "gateway", normalize: false })
    .error({ ApiError })
    .onRequest(async ({ request, set, server }) => {
      const requestId = pickRequestId(request.headers.get(REQUEST_ID_HEADER));
      const state = beginRequest(request, requestId);
      set.headers[REQUEST_ID_HEADER] = requestId;
      if (targetLength(request.url) > MAX_TARGET_LENGTH) {
        record(request, "uri_too_long", 414);
        return errorResponse(
          new ApiError("uri_too_long", `The request target is longer than ${MAX_TARGET_LENGTH} characters.`, { limit: MAX_TARGET_LENGTH }),
          requestId,
        );
      }
      const path = pathOf(request.url);
      if (!isV1(path)) return;

      // Authentication comes before anything else, so an unauthenticated caller learns nothing (not even 404).
      const address = server?.requestIP(request)?.address;
      try {
        state.principal = await auth.authenticate(request.headers.get("authorization"), address);
      } catch (err) {
        const apiErr = err instanceof ApiError ? err : new ApiError("service_unavailable", "Authentication is unavailable.");
        const headers = authErrorHeaders(apiErr);
        // A refused lookup is answered after its Retry-After, within the pacer's bounds (refusal-pace.ts).
        if (headers["retry-after"] !== undefined) await pacer.hold(clientKey(address), Number(headers["retry-after"]) * 1_000);
        // An answer from here skips Elysia's later hooks (onAfterResponse included): record it now.
        record(request, "unauthenticated", apiErr.status);
        return errorResponse(apiErr, requestId, headers);
      }

      const decision = await limiter.take(state.principal.keyId, requestCost(request.method, path, request.headers));
      if (decision === undefined) {
        countRateLimitFailOpen();
        return;
      }
      const headers = rateLimitHeaders(decision);
      Object.assign(set.headers, headers);
      if (!decision.allowed) {
        record(request, "rate_limited", 429);
        const limited = new ApiError("rate_limited", "Too many requests for this API key; retry after the Retry-After delay.", {
          retryAfterSeconds: decision.retryAfterSeconds,
        });
        return errorResponse(limited, requestId, headers);
      }
    })
    .onParse(async ({ request }) => {
      const { value, present } = await parseJsonBody(request);
      if (present && value !== null && request.headers.has(IDEMPOTENCY_HEADER)) {
        const state = stateOf(request);
        if (state) state.canonicalBody = canonicalJson(value);
      }
      return value;
    })
    .onError(({ code, error, request, set }) => {
      const requestId = requestIdOf(request) || pickRequestId(null);
      const extra: Record<string, string> = {};
      let apiErr: ApiError;
      // Elysia wraps whatever the body parser throws in a ParseError; ours throws the contract's ApiError.
      const cause = code === "PARSE" ? (error as Error).cause : undefined;
      if (error instanceof ApiError) {
        apiErr = error;
      } else if (cause instanceof ApiError) {
        apiErr = cause;
      } else if (error instanceof ValidationError) {
        apiErr = fromValidationError(error);
      } else if (code === "NOT_FOUND") {
        const allow = allowedMethods(pathOf(request.url));
        if (allow.length > 0) {
          apiErr = methodNotAllowed(allow);
          extra.allow = allow.join(", ");
        } else {
          apiErr = notFound();
        }
      } else if (code === "PARSE") {
        apiErr = invalidRequest("The request body is not valid JSON.", "/");
      } else {
        gatewayLog.error("unhandled gateway error", { requestId, method: request.method, path: pathOf(request.url), err: error });
        apiErr = internalError();
      }
      if (apiErr.code === "not_found" && !extra.allow) {
        // A literal path that shares its shape with a parameter route (GET …/events/recover reaches GET
        // …/events/:eventId, a malformed event id): the literal route decides, so a method it does not serve is 405.
        const allow = allowedMethods(pathOf(request.url));
        if (allow.length > 0 && !allow.includes(request.method)) {
          apiErr = methodNotAllowed(allow);
          extra.allow = allow.join(", ");
        }
      }
      if (apiErr.code === "unauthorized") Object.assign(extra, UNAUTHORIZED_HEADERS);
      if (apiErr.status >= 500) {
        gatewayLog.warn("request failed", { requestId, method: request.method, path: pathOf(request.url), code: apiErr.code });
      }
      set.status = apiErr.status;
      return errorResponse(apiErr, requestId, { ...stringHeaders(set.headers), ...extra });
    })
    .onAfterResponse(({ request, route, set, responseValue }) => {
      // A handler that returns a Response (/readyz's 503, errors) sets its status there, not on `set`.
      const status = responseValue instanceof Response ? responseValue.status : typeof set.status === "number" ? set.status : 200;
      record(request, route || "unmatched", status);
    })
    .use(docsPlugin(() => whole))
    .use(consolePlugin())
    .get("/healthz", ({ request }) => operational(request), {
      response: { 200: t.Object({ status: t.Literal("ok") }) },
      detail: { summary: "Liveness", tags: ["operations"], security: [] },
    })
    .get("/readyz", ({ request }) => operational(request), {
      response: { 200: ReadinessSchema, 503: ReadinessSchema },
      detail: { summary: "Readiness: authentication through the registry (and its PostgreSQL)", tags: ["operations"], security: [] },
    })
    .get("/metrics", ({ request }) => operational(request), {
      response: { 200: t.String({ description: "Prometheus text exposition format." }) },
      detail: { summary: "Prometheus metrics", tags: ["operations"], security: [] },
    })
    // The /v1 operations, one file each (gateway/routes/).
    .use(apiRoutes(deps))
    .onStop(() => {
      if (ownsRedis) redis.disconnect();
    });

  // The docs and the 405 answers read the routes of the finished app.
  const whole: AnyElysia = app;
  const allowedMethods = createMethodIndex(() => app.routes);
  return app;
}

export type GatewayApp = ReturnType<typeof createGatewayApp>;
