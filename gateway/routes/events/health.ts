// GET /v1/subscriptions/:id/health: a subscription's delivery health over the last hour and day.
import { Elysia, t, type Static } from "elysia";
import type { HealthResponse, WindowStats } from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { RPC_OPTIONS, rpc } from "../../deps.ts";
import { isoTime } from "../../render.ts";
import { SubscriptionIdParams, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { deliveryAccess } from "./access.ts";
import { TAGS } from "./view.ts";

const PATH = "/v1/subscriptions/:id/health";

const WindowSchema = t.Object({
  attempts: t.Integer(),
  succeeded: t.Integer(),
  successRate: t.Union([t.Number(), t.Null()], { description: "succeeded / attempts, 0 to 1; null without attempts." }),
});

const HealthSchema = t.Object(
  {
    lastHour: WindowSchema,
    last24Hours: WindowSchema,
    lastSuccess: t.Union([t.String({ format: "date-time" }), t.Null()]),
    lastFailure: t.Union([t.Object({ date: t.String({ format: "date-time" }), reason: t.String() }), t.Null()], {
      description: "The latest failed attempt: its time and its error, or HTTP <status> when the destination answered.",
    }),
    consecutiveFailures: t.Integer({ description: "Failed attempts since the last successful one." }),
    durationMs: t.Object({
      p50: t.Union([t.Number(), t.Null()]),
      p99: t.Union([t.Number(), t.Null()]),
    }, { description: "Attempt duration percentiles over the last 24 hours, in ms to 0.1 ms." }),
    pending: t.Integer({ description: "Events waiting for delivery (held ones included)." }),
    hourlySuccessRate: t.Array(t.Union([t.Number(), t.Null()]), {
      description: "Success rate of each of the last 24 hours, oldest first; null for an hour without attempts.",
    }),
  },
  { title: "SubscriptionHealth" },
);
type HealthJson = Static<typeof HealthSchema>;

function renderWindow(w: WindowStats | undefined): HealthJson["lastHour"] {
  return { attempts: Number(w?.attempts ?? 0n), succeeded: Number(w?.succeeded ?? 0n), successRate: w?.successRate ?? null };
}

/** A percentile interpolated between whole-millisecond attempts, to 0.1 ms (not 6.9399999999999995). */
function tenthOfMs(ms: number | undefined): number | null {
  return ms === undefined ? null : Math.round(ms * 10) / 10;
}

function renderHealth(h: HealthResponse): HealthJson {
  return {
    lastHour: renderWindow(h.lastHour),
    last24Hours: renderWindow(h.last24h),
    lastSuccess: h.lastSuccessMs === undefined ? null : isoTime(h.lastSuccessMs),
    lastFailure: h.lastFailureMs === undefined ? null : { date: isoTime(h.lastFailureMs), reason: h.lastFailureReason ?? "" },
    consecutiveFailures: Number(h.consecutiveFailures),
    durationMs: { p50: tenthOfMs(h.p50DurationMs), p99: tenthOfMs(h.p99DurationMs) },
    pending: Number(h.pending),
    hourlySuccessRate: h.hourlySuccessRate.map((r) => (r < 0 ? null : r)),
  };
}

export const subscriptionHealth: Operation = {
  key: operationKey("get", PATH),
  examples: {
    response: {
      "200": {
        lastHour: { attempts: 120, succeeded: 118, successRate: 0.9833 },
        last24Hours: { attempts: 2880, succeeded: 2851, successRate: 0.9899 },
        lastSuccess: "2026-11-22T02:26:03.123Z",
        lastFailure: { date: "2026-11-22T02:11:40.508Z", reason: "HTTP 503" },
        consecutiveFailures: 0,
        durationMs: { p50: 184, p99: 912 },
        pending: 3,
        hourlySuccessRate: [1, 1, 1, 0.99, 1, 1, 1, 1, 0.98, 1, 1, 1, 1, 1, null, 1, 1, 0.97, 1, 1, 1, 1, 1, 0.98],
      },
    },
  },
  route: (deps) => {
    const { delivery, owned } = deliveryAccess(deps);
    return new Elysia({ name: subscriptionHealth.key }).get(
      PATH,
      async ({ params, request }) => {
        const ref = await owned(request, params.id);
        return renderHealth(await rpc(() => delivery().getHealth(ref, RPC_OPTIONS)));
      },
      {
        params: SubscriptionIdParams,
        response: { 200: HealthSchema, ...errorResponses(401, 404, 429, 503) },
        detail: {
          summary: "A subscription's delivery health",
          description: "Success rate over the last hour and 24 hours, last success and failure, consecutive failures, attempt duration p50/p99, pending events.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    );
  },
};
