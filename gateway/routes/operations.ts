// Delivery operations: an event's attempts, recover since a time, the event search across all of the key's
// subscriptions (GET /v1/events) and a subscription's health. JSON ⇄ RPC only; the rules are the deliverer's.
import { Elysia, t, type Static } from "elysia";
import { ApiError, invalidRequest } from "../../common/contract/index.ts";
import type { Attempt, HealthResponse, WindowStats } from "../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { principalOf } from "../context.ts";
import { RPC_OPTIONS, rpc, type GatewayDeps } from "../deps.ts";
import { idempotencyFor, replayHeaders } from "../idempotency.ts";
import { isoTime } from "../render.ts";
import { IdempotencyHeaders, InputObject, PageQuery, SubscriptionIdParams, errorResponses } from "../schemas.ts";
import { EventPageSchema, EventParams, deliveryAccess, eventId, eventPageJson, jsonResponse } from "./events.ts";
import { subscriptionId } from "./subscriptions.ts";
import { queryPageLimit } from "../../common/page-token.ts";
import { checkEventSearchFilters, SEARCH_REFS_PER_REQUEST } from "../../common/event-search.ts";

const TAGS = ["events"];
const SECURITY = [{ bearer: [] }];
/** A recover answers once every matching event is queued: far longer than an ordinary call may take. */
const RECOVER_RPC_OPTIONS = { timeoutMs: 300_000 } as const;

const AttemptSchema = t.Object(
  {
    id: t.String({ description: "att_ + ULID." }),
    date: t.String({ format: "date-time", description: "When the attempt started." }),
    durationMs: t.Integer(),
    responseStatus: t.Union([t.Integer(), t.Null()], { description: "The HTTP status; null when the attempt got no HTTP response (always null for amqp and nats)." }),
    responseBody: t.Union([t.String(), t.Null()], {
      description:
        "First 4,096 bytes of the response (cut on a UTF-8 boundary); null when an https attempt got no response. For amqp and nats destinations always the broker's short answer, failed attempts included: acked, returned: NO_ROUTE, no stream, timeout, ….",
    }),
    error: t.Union([t.String(), t.Null()], {
      description: "Null when the attempt succeeded or the destination answered with an HTTP status; else a short reason: timeout, connection refused, TLS error, SSRF block, or the broker's answer (returned: NO_ROUTE, no stream, nacked, …).",
    }),
    trigger: t.Union([t.Literal("automatic"), t.Literal("manual")], { description: "manual: in a cycle started by retry or recover." }),
  },
  { title: "Attempt" },
);
type AttemptJson = Static<typeof AttemptSchema>;

const AttemptPageSchema = t.Object(
  { items: t.Array(AttemptSchema), nextPageToken: t.Optional(t.String({ description: "Absent on the last page." })) },
  { title: "AttemptPage" },
);

const IsoTime = (description: string) => t.String({ description: `${description} ISO 8601 time, e.g. 2026-11-22T02:26:03.123Z.` });

const RecoverInput = InputObject({
  since: IsoTime("Events created at or after this time; at most 14 days ago, not in the future."),
  until: t.Optional(IsoTime("Events created before this time; default now.")),
  status: t.Optional(t.Union([t.Literal("failed"), t.Literal("delivered")], { description: "Which events to re-queue; default failed." })),
});

const RecoverResultSchema = t.Object(
  { recovered: t.Integer({ description: "Events re-queued (each starts a manual delivery cycle)." }) },
  { title: "RecoverResult" },
);

const SearchQuery = InputObject({
  txId: t.Optional(t.String({ description: "Transaction id, 64 hex digits (another form is invalid_request)." })),
  address: t.Optional(t.String({ description: "A base58check TRON address, as sender or receiver (another form is invalid_address)." })),
  chainId: t.Optional(t.String({ description: "tron:mainnet, tron:nile or tron:shasta." })),
  kind: t.Optional(t.String({
    description: "Event kind: wallet.transfer.broadcasted, wallet.transfer.confirmed, wallet.transfer.failed or service.ping (another is invalid_request).",
  })),
  status: t.Optional(t.Union([t.Literal("pending"), t.Literal("delivered"), t.Literal("failed")])),
  subscriptionId: t.Optional(t.String({ description: "Only this subscription's events (another key's is not_found)." })),
  since: t.Optional(IsoTime("Created at or after.")),
  until: t.Optional(IsoTime("Created before; after since when both are given.")),
  limit: PageQuery.properties.limit,
  nextPageToken: PageQuery.properties.nextPageToken,
});

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

/** An ISO 8601 time of a request, as Unix ms; anything else is invalid_request at `param`. */
export function parseTime(value: string, param: string): bigint {
  const ms = /^\d{4}-\d{2}-\d{2}T/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) throw invalidRequest(`${param.replace(/^\//, "")} must be an ISO 8601 time.`, param);
  return BigInt(ms);
}

function renderAttempt(a: Attempt): AttemptJson {
  return {
    id: a.id,
    date: isoTime(a.dateMs),
    durationMs: a.durationMs,
    responseStatus: a.responseStatus ?? null,
    responseBody: a.responseBody ?? null,
    error: a.error ?? null,
    trigger: a.trigger === "manual" ? "manual" : "automatic",
  };
}

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

export function operationRoutes(deps: GatewayDeps) {
  const { delivery, owned } = deliveryAccess(deps);

  return new Elysia({ name: "routes-operations" })
    .get(
      "/v1/subscriptions/:id/events/:eventId/attempts",
      async ({ params, query, request }) => {
        const ref = await owned(request, params.id);
        const id = eventId(params.eventId);
        const res = await rpc(() =>
          delivery().listAttempts({ ...ref, eventId: id, limit: queryPageLimit(query.limit), pageToken: query.nextPageToken ?? "" }, RPC_OPTIONS),
        );
        const page: { items: AttemptJson[]; nextPageToken?: string } = { items: res.items.map(renderAttempt) };
        if (res.nextPageToken) page.nextPageToken = res.nextPageToken;
        return page;
      },
      {
        params: EventParams,
        query: PageQuery,
        response: { 200: AttemptPageSchema, ...errorResponses(400, 401, 404, 429, 503) },
        detail: {
          summary: "List an event's delivery attempts, newest first",
          description: "Every attempt is kept as long as its event. trigger is manual for attempts of a cycle started by retry or recover.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    )
    .post(
      "/v1/subscriptions/:id/events/recover",
      async ({ params, body, request, set }) => {
        const ref = await owned(request, params.id);
        const sinceMs = parseTime(body.since, "/since");
        const untilMs = body.until === undefined ? undefined : parseTime(body.until, "/until");
        const idempotency = idempotencyFor(request, `/v1/subscriptions/${ref.subscriptionId}/events/recover`);
        const res = await rpc(() =>
          delivery().recoverEvents({ ...ref, sinceMs, untilMs, status: body.status ?? "", idempotency }, RECOVER_RPC_OPTIONS),
        );
        Object.assign(set.headers, replayHeaders(res.idempotency));
        set.status = 202;
        return { recovered: Number(res.recovered) };
      },
      {
        params: SubscriptionIdParams,
        body: RecoverInput,
        headers: IdempotencyHeaders,
        response: { 202: RecoverResultSchema, ...errorResponses(400, 401, 404, 409, 413, 415, 429, 503) },
        detail: {
          summary: "Recover: re-queue every failed (or delivered) event since a time",
          description:
            "Answers once every matching event is queued again (in batches, each a short transaction); each starts a manual delivery cycle. 409 subscription_disabled on a disabled subscription. Idempotency-Key honoured.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    )
    .get(
      "/v1/events",
      async ({ query, request }) => {
        const { keyId } = principalOf(request);
        // Checked here too, before the ownership lookup: a malformed filter costs no RPC.
        const { txId, address } = checkEventSearchFilters({ txId: query.txId ?? "", address: query.address ?? "" });
        let sub = "";
        if (query.subscriptionId !== undefined && query.subscriptionId !== "") {
          sub = (await owned(request, subscriptionId(query.subscriptionId))).subscriptionId;
        }
        const res = await rpc(() =>
          delivery().searchEvents(
            {
              keyId,
              subscriptionId: sub,
              txId,
              address,
              chainId: query.chainId ?? "",
              kind: query.kind ?? "",
              status: query.status ?? "",
              sinceMs: query.since === undefined ? undefined : parseTime(query.since, "since"),
              untilMs: query.until === undefined ? undefined : parseTime(query.until, "until"),
              limit: queryPageLimit(query.limit),
              pageToken: query.nextPageToken ?? "",
            },
            RPC_OPTIONS,
          ),
        );
        return jsonResponse(eventPageJson(res.items, res.nextPageToken));
      },
      {
        query: SearchQuery,
        response: { 200: EventPageSchema, ...errorResponses(400, 401, 404, 429, 503) },
        detail: {
          summary: "Search events across all of the key's subscriptions, newest first",
          description:
            "Every filter is optional and served by an index; a page token belongs to its filter set. With an address or a txId, a request " +
            `reads at most ${SEARCH_REFS_PER_REQUEST.toLocaleString("en-US")} of its events before answering: when the other filters leave out most of them, a page may ` +
            "hold fewer than limit events (even none) and still carry a nextPageToken; only the last page has none.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    )
    .get(
      "/v1/subscriptions/:id/health",
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
}
