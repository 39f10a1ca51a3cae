// /v1/subscriptions/:id/test and /v1/subscriptions/:id/events[/:eventId[/retry]]: the delivery log. The gateway
// checks with the registry that the key owns the subscription, then asks the deliverer, which owns events and the
// idempotency records of test and retry. JSON ⇄ RPC only; the rules are the deliverer's.
import { createClient, type Client } from "@connectrpc/connect";
import { Elysia, t, type Static } from "elysia";
import { ApiError, internalError, notFound } from "../../common/contract/index.ts";
import { isId } from "../../common/ids.ts";
import { HOLD_REASONS, isHoldReason } from "../../common/hold-reasons.ts";
import { DeliveryService, type EventView } from "../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { principalOf } from "../context.ts";
import { RPC_OPTIONS, WRITE_RPC_OPTIONS, rpc, type GatewayDeps } from "../deps.ts";
import { idempotencyFor, replayHeaders } from "../idempotency.ts";
import { isoTime } from "../render.ts";
import { IdempotencyHeaders, InputObject, PageQuery, SubscriptionIdParams, errorResponses } from "../schemas.ts";
import { subscriptionId } from "./subscriptions.ts";
import { queryPageLimit } from "../../common/page-token.ts";

const TAGS = ["events"];
const SECURITY = [{ bearer: [] }];

export const EventViewSchema = t.Object(
  {
    id: t.String({ description: "evt_ + ULID; also the webhook-id header of every delivery attempt." }),
    subscriptionId: t.String(),
    kind: t.String({ examples: ["wallet.transfer.broadcasted", "service.ping"] }),
    chainId: t.Union([t.String(), t.Null()], { description: "CAIP-2 chain id; null for service.ping." }),
    status: t.Union([t.Literal("pending"), t.Literal("delivered"), t.Literal("failed")]),
    attempts: t.Integer({ description: "Attempts in the current dispatch cycle (a manual retry resets it to 0)." }),
    deliveryCount: t.Integer({ description: "Successful deliveries across all cycles; never decreases." }),
    responseStatus: t.Union([t.Integer(), t.Null()], {
      description: "Last HTTP status; null until an attempt got an HTTP response, and always null for amqp and nats destinations.",
    }),
    responseBody: t.Union([t.String(), t.Null()], {
      description:
        "First 4,096 bytes of the last response (cut on a UTF-8 boundary), or a short reason when the attempt got no response. For amqp and nats destinations the broker's answer: acked, returned: NO_ROUTE, no stream, timeout, ….",
    }),
    heldReason: t.Union([...HOLD_REASONS.map((r) => t.Literal(r)), t.Null()], {
      description:
        "Set while a pending event is held (kept, not attempted): subscription_disabled, key_revoked, or secret_unreadable (the subscription's stored signing secret cannot be decrypted; rotating the secret resumes it). Held events resume on their own once the reason is gone; null otherwise.",
    }),
    payload: t.Record(t.String(), t.Unknown(), { description: "The webhook payload: {id, kind, date, subscriptionId, data}." }),
    dateCreated: t.String({ format: "date-time" }),
  },
  { title: "EventView" },
);
export type EventViewJson = Static<typeof EventViewSchema>;

export const EventPageSchema = t.Object(
  {
    items: t.Array(EventViewSchema),
    nextPageToken: t.Optional(t.String({ description: "Absent on the last page." })),
  },
  { title: "EventPage" },
);

export const EventParams = t.Object({
  id: SubscriptionIdParams.properties.id,
  eventId: t.String({ pattern: "^evt_[0-9A-HJKMNP-TV-Z]{26}$", description: "Event id (evt_ + ULID). A malformed id is not_found." }),
});

const EventQuery = InputObject({
  limit: PageQuery.properties.limit,
  status: t.Optional(t.Union([t.Literal("pending"), t.Literal("delivered"), t.Literal("failed")], { description: "Only events in this status." })),
  nextPageToken: PageQuery.properties.nextPageToken,
});

const TestInput = t.Optional(
  InputObject({
    kind: t.Optional(t.String({ description: "service.ping (default), or wallet.transfer.broadcasted, wallet.transfer.confirmed or wallet.transfer.failed for a sample transfer of that kind marked test: true (failed: reason REVERT)." })),
  }),
);

/** The view's fields before `payload`, in the schema's order. */
type EventHead = Omit<EventViewJson, "payload" | "dateCreated">;

function eventHead(e: EventView): EventHead {
  return {
    id: e.id,
    subscriptionId: e.subscriptionId,
    kind: e.kind,
    chainId: e.chainId ?? null,
    status: e.status as EventViewJson["status"],
    attempts: e.attempts,
    deliveryCount: e.deliveryCount,
    responseStatus: e.responseStatus ?? null,
    responseBody: e.responseBody ?? null,
    heldReason: e.heldReason !== undefined && isHoldReason(e.heldReason) ? e.heldReason : null,
  };
}

/**
 * An event view (EventViewSchema) as JSON text. The payload is spliced in as the deliverer's text ("the webhook
 * payload JSON exactly as delivered", delivery.proto) instead of parsed here only to be serialized again: for a page
 * of 50 transfer views that round trip cost ~290 µs against ~40 µs for the text (2026-11-24, best of seven runs in
 * one process), before Elysia's check of the parsed page. The text equals JSON.stringify of the view object.
 */
export function eventJson(e: EventView | undefined): string {
  // An empty payload would splice into invalid JSON: the deliverer always sends one, so its absence is a fault.
  if (!e || e.payloadJson === "") throw internalError();
  const head = JSON.stringify(eventHead(e));
  return `${head.slice(0, -1)},"payload":${e.payloadJson},"dateCreated":"${isoTime(e.dateCreatedMs)}"}`;
}

/** A page of event views (EventPageSchema) as JSON text. */
export function eventPageJson(items: readonly EventView[], nextPageToken: string): string {
  const token = nextPageToken ? `,"nextPageToken":${JSON.stringify(nextPageToken)}` : "";
  return `{"items":[${items.map(eventJson).join(",")}]${token}}`;
}

/**
 * Event routes answer with a Response holding that text. Elysia passes a Response through as is: its response
 * schema (EventViewSchema, EventPageSchema) still documents the body in the OpenAPI document, but is no longer checked
 * on each answer; test/unit/event-render.test.ts checks the text against the schemas and against JSON.stringify of
 * the view object. The headers set on the context (request id, rate limit, replay) are merged in.
 */
export function jsonResponse(text: string): Response {
  return new Response(text, { headers: { "content-type": "application/json;charset=utf-8" } });
}

export function eventId(id: string): string {
  if (!isId("evt", id)) throw notFound();
  return id;
}

/** The deliverer's client and the ownership check every subscription-scoped event route starts with. */
export function deliveryAccess(deps: GatewayDeps) {
  let client: Client<typeof DeliveryService> | undefined;
  const delivery = (): Client<typeof DeliveryService> => {
    if (!deps.deliverer) throw new ApiError("service_unavailable", "Event delivery is not available right now.");
    return (client ??= createClient(DeliveryService, deps.deliverer));
  };

  /** The key owns the subscription (else not_found, as for any foreign resource). */
  async function owned(request: Request, rawId: string): Promise<{ keyId: string; subscriptionId: string }> {
    const { keyId } = principalOf(request);
    const id = subscriptionId(rawId);
    await rpc(() => deps.subscriptions.getSubscription({ keyId, id }, RPC_OPTIONS));
    return { keyId, subscriptionId: id };
  }
  return { delivery, owned };
}

export function eventRoutes(deps: GatewayDeps) {
  const { delivery, owned } = deliveryAccess(deps);

  return new Elysia({ name: "routes-events" })
    .post(
      "/v1/subscriptions/:id/test",
      async ({ params, body, request, set }) => {
        const ref = await owned(request, params.id);
        const idempotency = idempotencyFor(request, `/v1/subscriptions/${ref.subscriptionId}/test`);
        const res = await rpc(() => delivery().createTestEvent({ ...ref, kind: body?.kind ?? "", idempotency }, WRITE_RPC_OPTIONS));
        Object.assign(set.headers, replayHeaders(res.idempotency));
        return jsonResponse(eventJson(res.event));
      },
      {
        params: SubscriptionIdParams,
        body: TestInput,
        headers: IdempotencyHeaders,
        response: { 200: EventViewSchema, ...errorResponses(400, 401, 404, 409, 413, 415, 429, 503) },
        detail: {
          summary: "Send a test event",
          description:
            "Fires service.ping (default) or a sample transfer event (wallet.transfer.broadcasted, .confirmed or .failed), whatever the subscription's events and addresses. 409 subscription_disabled on a disabled subscription.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    )
    .get(
      "/v1/subscriptions/:id/events",
      async ({ params, query, request }) => {
        const ref = await owned(request, params.id);
        const res = await rpc(() =>
          delivery().listEvents(
            { ...ref, limit: queryPageLimit(query.limit), status: query.status ?? "", pageToken: query.nextPageToken ?? "" },
            RPC_OPTIONS,
          ),
        );
        return jsonResponse(eventPageJson(res.items, res.nextPageToken));
      },
      {
        params: SubscriptionIdParams,
        query: EventQuery,
        response: { 200: EventPageSchema, ...errorResponses(400, 401, 404, 429, 503) },
        detail: { summary: "List a subscription's events, newest first", tags: TAGS, security: SECURITY },
      },
    )
    .get(
      "/v1/subscriptions/:id/events/:eventId",
      async ({ params, request }) => {
        const ref = await owned(request, params.id);
        const id = eventId(params.eventId);
        const res = await rpc(() => delivery().getEvent({ ...ref, eventId: id }, RPC_OPTIONS));
        return jsonResponse(eventJson(res.event));
      },
      {
        params: EventParams,
        response: { 200: EventViewSchema, ...errorResponses(401, 404, 429, 503) },
        detail: { summary: "Get one event", tags: TAGS, security: SECURITY },
      },
    )
    .post(
      "/v1/subscriptions/:id/events/:eventId/retry",
      async ({ params, request, set }) => {
        const ref = await owned(request, params.id);
        const id = eventId(params.eventId);
        const idempotency = idempotencyFor(request, `/v1/subscriptions/${ref.subscriptionId}/events/${id}/retry`);
        const res = await rpc(() => delivery().retryEvent({ ...ref, eventId: id, idempotency }, WRITE_RPC_OPTIONS));
        Object.assign(set.headers, replayHeaders(res.idempotency));
        return jsonResponse(eventJson(res.event));
      },
      {
        params: EventParams,
        headers: IdempotencyHeaders,
        response: { 200: EventViewSchema, ...errorResponses(401, 404, 409, 413, 415, 429, 503) },
        detail: {
          summary: "Retry an event",
          description:
            "For failed and delivered events (a re-send; a success adds to deliveryCount): back to pending with attempts 0, the automatic schedule restarts. 409 event_not_retryable for a pending event, 409 subscription_disabled on a disabled subscription.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    );
}
