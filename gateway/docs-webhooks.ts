// The OpenAPI 3.1 `webhooks` section: what a customer's endpoint receives, one POST per event kind with its payload
// schema, the delivery headers, what each answer means to the sender, and a full example signed for real.
import type { TSchema } from "elysia";
import {
  ACTIVITY_DATA_SCHEMAS,
  BroadcastedDataSchema,
  ConfirmedDataSchema,
  DELIVERY_HEADERS,
  EVENT_DESCRIPTIONS,
  FailedDataSchema,
  GUARANTEES,
  PingDataSchema,
  VERIFY_EXAMPLE,
  exampleDelivery,
} from "./event-catalog.ts";
import { ACTIVITY_KINDS, EVENT_KINDS, RESPONSE_BODY_LIMIT, type EventKind } from "../common/contract/index.ts";
import { DEFAULT_RETRY_SCHEDULE, JITTER_FRACTION, RETRY_AFTER_MAX_FACTOR, describeSchedule, parseRetrySchedule } from "../common/retry-policy.ts";

/** A TypeBox schema as plain JSON Schema (TypeBox's symbol keys dropped). */
export function plainSchema(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

/** Each kind's data schema under its title (ApprovalBroadcastedData, …). */
const DATA: Record<EventKind, { name: string; schema: TSchema }> = {
  "wallet.transfer.broadcasted": { name: "TransferBroadcastedData", schema: BroadcastedDataSchema },
  "wallet.transfer.confirmed": { name: "TransferConfirmedData", schema: ConfirmedDataSchema },
  "wallet.transfer.failed": { name: "TransferFailedData", schema: FailedDataSchema },
  ...(Object.fromEntries(
    ACTIVITY_KINDS.map((kind) => [kind, { name: ACTIVITY_DATA_SCHEMAS[kind].title as string, schema: ACTIVITY_DATA_SCHEMAS[kind] }]),
  ) as Record<(typeof ACTIVITY_KINDS)[number], { name: string; schema: TSchema }>),
  "service.ping": { name: "PingData", schema: PingDataSchema },
};

/** walletTransferBroadcasted, servicePing: the kind as an identifier. */
function identifier(kind: EventKind): string {
  return kind.split(".").map((part, i) => (i === 0 ? part : part[0]!.toUpperCase() + part.slice(1))).join("");
}

function payloadName(kind: EventKind): string {
  const id = identifier(kind);
  return id[0]!.toUpperCase() + id.slice(1);
}

function envelopeSchema(kind: EventKind): Record<string, unknown> {
  return {
    title: payloadName(kind),
    description: `The body of a ${kind} delivery.`,
    type: "object",
    required: ["id", "kind", "date", "subscriptionId", "data"],
    properties: {
      id: { type: "string", description: "The event id (evt_ + ULID); equals the webhook-id header." },
      kind: { type: "string", const: kind },
      date: { type: "string", format: "date-time", description: "When the event was made (ISO 8601, UTC, milliseconds)." },
      subscriptionId: { type: "string", description: "sub_ + ULID; equals the x-subscription-id header." },
      data: { $ref: `#/components/schemas/${DATA[kind].name}` },
    },
  };
}

/** The payload schemas, for components.schemas. */
export const WEBHOOK_SCHEMAS: Record<string, Record<string, unknown>> = Object.fromEntries(
  EVENT_KINDS.flatMap((kind) => [
    [DATA[kind].name, plainSchema(DATA[kind].schema)],
    [payloadName(kind), envelopeSchema(kind)],
  ]),
);

/** One reference per payload schema (the event log's payload is one of them). */
export const WEBHOOK_PAYLOAD_REFS = EVENT_KINDS.map((kind) => ({ $ref: `#/components/schemas/${payloadName(kind)}` }));

export const WEBHOOKS_TAG = {
  name: "webhooks",
  description: [
    "What your endpoint receives: an HTTPS POST per event, body = the payload JSON, signed with the Standard Webhooks scheme.",
    "",
    GUARANTEES,
    "",
    "Verify every delivery before acting on it, on the raw body, with the subscription's secret (TypeScript, `standardwebhooks`):",
    "",
    "```ts",
    VERIFY_EXAMPLE,
    "```",
  ].join("\n"),
};

const DEFAULT_SCHEDULE = parseRetrySchedule(DEFAULT_RETRY_SCHEDULE);

function ordinal(n: number): string {
  const suffix = n % 100 >= 11 && n % 100 <= 13 ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th");
  return `${n}${suffix}`;
}

const RESPONSES = {
  "2XX": {
    description: `Any 2xx acknowledges the delivery. The first ${RESPONSE_BODY_LIMIT.toLocaleString("en-US")} bytes of the answer are kept as the event's responseBody.`,
  },
  "429": {
    description:
      "A failed attempt. A Retry-After header (seconds or an HTTP date) sets the delay before the next one, kept within " +
      `[the scheduled delay, ${RETRY_AFTER_MAX_FACTOR === 2 ? "twice" : `${RETRY_AFTER_MAX_FACTOR} times`} it].`,
  },
  "503": { description: "A failed attempt; Retry-After is honoured as for 429." },
  default: {
    description:
      "Any other status (redirects are not followed), no complete answer within 15 s, or a connection or TLS failure: a failed " +
      `attempt. Attempts follow the schedule ${describeSchedule(DEFAULT_SCHEDULE)} (each with up to ${JITTER_FRACTION * 100}% jitter); ` +
      `after the ${ordinal(DEFAULT_SCHEDULE.length)} failure the event is failed and POST /v1/subscriptions/{id}/events/{eventId}/retry sends it again.`,
  },
};

function webhookOperation(kind: EventKind): Record<string, unknown> {
  const { headers, body } = exampleDelivery(kind);
  const { summary, when } = EVENT_DESCRIPTIONS[kind];
  return {
    post: {
      operationId: identifier(kind),
      summary: `${kind}: ${summary}`,
      description: `${when}\n\n${GUARANTEES}\n\nVerify the signature before acting on a delivery: see the webhooks tag.`,
      tags: [WEBHOOKS_TAG.name],
      security: [],
      parameters: Object.entries(DELIVERY_HEADERS).map(([name, description]) => ({
        name,
        in: "header",
        required: true,
        description,
        schema: { type: "string" },
        example: headers[name],
      })),
      requestBody: {
        required: true,
        description: "The payload, Content-Type application/json; the same bytes on every attempt of the event.",
        content: {
          "application/json": {
            schema: { $ref: `#/components/schemas/${payloadName(kind)}` },
            example: JSON.parse(body) as unknown,
          },
        },
      },
      responses: RESPONSES,
    },
  };
}

/** `webhooks` of the document, keyed by event kind. */
export function webhooksSection(): Record<string, unknown> {
  return Object.fromEntries(EVENT_KINDS.map((kind) => [kind, webhookOperation(kind)]));
}
