// The event view of the delivery log (/v1/subscriptions/:id/events…, /v1/events): its schema, and the JSON text the
// event operations answer with, the deliverer's payload spliced in.
import { t, type Static } from "elysia";
import { BROADCASTED, PING, RESPONSE_BODY_LIMIT, internalError, notFound } from "../../../common/contract/index.ts";
import { HOLD_REASONS, isHoldReason } from "../../../common/hold-reasons.ts";
import { isId } from "../../../common/ids.ts";
import type { EventView } from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { isoTime } from "../../render.ts";
import { SubscriptionIdParams } from "../../schemas.ts";

export const TAGS = ["events"];

export const EventViewSchema = t.Object(
  {
    id: t.String({ description: "evt_ + ULID; also the webhook-id header of every delivery attempt." }),
    subscriptionId: t.String(),
    kind: t.String({ examples: [BROADCASTED, PING] }),
    chainId: t.Union([t.String(), t.Null()], { description: `CAIP-2 chain id; null for ${PING}.` }),
    status: t.Union([t.Literal("pending"), t.Literal("delivered"), t.Literal("failed")]),
    attempts: t.Integer({ description: "Attempts in the current dispatch cycle (a manual retry resets it to 0)." }),
    deliveryCount: t.Integer({ description: "Successful deliveries across all cycles; never decreases." }),
    responseStatus: t.Union([t.Integer(), t.Null()], {
      description: "Last HTTP status; null until an attempt got an HTTP response, and always null for amqp and nats destinations.",
    }),
    responseBody: t.Union([t.String(), t.Null()], {
      description:
        `First ${RESPONSE_BODY_LIMIT.toLocaleString("en-US")} bytes of the last response (cut on a UTF-8 boundary), or a short reason when the attempt got no response. ` +
        "For amqp and nats destinations the broker's answer: acked, returned: NO_ROUTE, no stream, timeout, ….",
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
 * payload JSON exactly as delivered", delivery.proto) instead of parsed here only to be serialized again
 * (docs/adr/0003-payload-stored-as-text.md). The text equals JSON.stringify of the view object.
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
 * on each answer; test/unit/gateway/event-render.test.ts checks the text against the schemas and against JSON.stringify of
 * the view object. The headers set on the context (request id, rate limit, replay) are merged in.
 */
export function jsonResponse(text: string): Response {
  return new Response(text, { headers: { "content-type": "application/json;charset=utf-8" } });
}

export function eventId(id: string): string {
  if (!isId("evt", id)) throw notFound();
  return id;
}
