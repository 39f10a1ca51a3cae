// The public JSON shapes as Elysia schemas: they validate requests and write the OpenAPI document.
// Only shape (types, required fields, enums) is checked here; the rules with their own error codes
// (events, description length, URL policy) belong to the registry.
import { t, type TSchema } from "elysia";
import { PAGE_LIMIT_DESCRIPTION } from "../common/page-token.ts";
import {
  CHAIN_CHOICES,
  EVENT_KINDS,
  INLINE_ADDRESSES,
  MAX_EVENTS,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  MAX_MATCH_ASSETS,
} from "../common/contract/index.ts";

type ObjectOptions = NonNullable<Parameters<typeof t.Object>[1]>;
type TProperties = Record<string, TSchema>;

/**
 * An object of a request (body or query): unknown fields are ignored (docs/CONTRACT.md), never rejected. Use it for
 * every request object: the gateway validates without Elysia's normalization, which would rewrite wrong values
 * (a string where an object belongs becomes {}) before reporting them.
 */
export function InputObject<T extends TProperties>(properties: T, options: ObjectOptions = {}) {
  return t.Object(properties, { additionalProperties: true, ...options });
}

export const ErrorBodySchema = t.Object(
  {
    error: t.String({ description: "Machine-readable error code, e.g. not_found, invalid_request." }),
    message: t.String({ description: "One sentence for a person." }),
    detail: t.Union([t.Record(t.String(), t.Unknown()), t.Null()], {
      description: "What a program needs: e.g. {param} for invalid_request, {ip, cidr} for ssrf_blocked.",
    }),
    requestId: t.String({ description: "The X-Request-Id of the request." }),
  },
  { title: "Error" },
);

export const AddressEntrySchema = t.Object(
  {
    chainId: t.String({ description: `CAIP-2 chain id: ${CHAIN_CHOICES}.`, examples: ["tron:mainnet"] }),
    address: t.String({ description: "Base58check TRON address (T...).", examples: ["TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"] }),
  },
  { title: "AddressEntry" },
);

const AMOUNT_DESCRIPTION = "Smallest amount that makes an event, in the asset's base units (decimal string; sun for TRX).";
const STANDARD = t.Union([t.Literal("TRX"), t.Literal("TRC10"), t.Literal("TRC20")], {
  description: "TRX; TRC10 with tokenId; TRC20 with contract.",
});
const DIRECTION = t.Union([t.Literal("incoming"), t.Literal("outgoing")], {
  description: "incoming: a watched address is the receiver (to); outgoing: the sender (from).",
});

export const AssetConditionSchema = t.Object(
  {
    standard: STANDARD,
    tokenId: t.Optional(t.String({ description: "TRC-10 token id (TRC10 only).", examples: ["1002000"] })),
    contract: t.Optional(t.String({ description: "TRC-20 contract, base58check (TRC20 only).", examples: ["TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"] })),
    minAmount: t.String({ description: `${AMOUNT_DESCRIPTION} "0" when none was given.` }),
  },
  { title: "AssetCondition" },
);

export const MatchSchema = t.Object(
  {
    assets: t.Union([t.Null(), t.Array(AssetConditionSchema)], { description: "null: every asset; otherwise only these." }),
    directions: t.Array(DIRECTION),
    includeZeroValue: t.Boolean({ description: "Whether transfers of amount 0 make events." }),
  },
  {
    title: "MatchConditions",
    description: "Which transfers of the watched addresses make events; defaults filled in. Account activity kinds ignore them.",
  },
);

export const AssetConditionInput = InputObject({
  standard: STANDARD,
  tokenId: t.Optional(t.String({ description: "TRC-10 token id, decimal (required for TRC10, only there)." })),
  contract: t.Optional(t.String({ description: "TRC-20 contract, base58check (required for TRC20, only there)." })),
  minAmount: t.Optional(t.String({ description: `${AMOUNT_DESCRIPTION} Default "0".`, examples: ["1000000"] })),
});

export const MatchInput = t.Union(
  [
    t.Null(),
    InputObject(
      {
        assets: t.Optional(
          t.Union([t.Null(), t.Array(AssetConditionInput)], {
            description: `null or omitted: every asset. Otherwise 1 to ${MAX_MATCH_ASSETS} distinct assets, each at or above its minAmount.`,
          }),
        ),
        directions: t.Optional(t.Array(DIRECTION, { description: 'Default both. Not empty; duplicates collapse.' })),
        includeZeroValue: t.Optional(
          t.Boolean({ description: "Default false: transfers of amount 0 (address poisoning) make no event." }),
        ),
      },
      { title: "MatchConditionsInput" },
    ),
  ],
  {
    description:
      "Which transfers of the watched addresses make events, for every transfer kind; the account activity kinds " +
      "(approval, permission, resource, blacklist) ignore them, and a subscription listing only those may still carry " +
      'them. Omitted or null: the default {"assets": null, "directions": ["incoming", "outgoing"], "includeZeroValue": false} (on PUT too).',
  },
);

const SecretField = t.Optional(
  t.String({ description: "whsec_ signing secret: only in the create and secret-rotation responses." }),
);

export const HttpsDestination = t.Object(
  {
    type: t.Literal("https"),
    // No `format` check on the way out: a response is never refused over a stored URL (rows written before URLs
    // were normalized may hold forms a strict URI check rejects), so a list or GET always renders.
    url: t.String({ description: "The destination URL in its normalized form (WHATWG URL href), exactly as stored." }),
    secret: SecretField,
  },
  { title: "HttpsDestination" },
);

export const AmqpDestination = t.Object(
  {
    type: t.Literal("amqp"),
    broker: t.String({ description: "A broker registered by the operator (bun run brokers add)." }),
    exchange: t.String({ description: '"" is the default exchange (routes to the queue named by routingKey).' }),
    routingKey: t.String(),
    secret: SecretField,
  },
  { title: "AmqpDestination" },
);

export const NatsDestination = t.Object(
  {
    type: t.Literal("nats"),
    broker: t.String({ description: "A broker registered by the operator (bun run brokers add)." }),
    subject: t.String({ description: "JetStream subject; a stream must capture it." }),
    secret: SecretField,
  },
  { title: "NatsDestination" },
);

export const SubscriptionSchema = t.Object(
  {
    id: t.String({ description: "sub_ + ULID." }),
    destination: t.Union([HttpsDestination, AmqpDestination, NatsDestination], {
      description: "Where events go, as it was given: an HTTPS URL, an AMQP exchange or a NATS JetStream subject.",
    }),
    events: t.Array(t.String()),
    filters: t.Object({
      addresses: t.Array(AddressEntrySchema, {
        description: `Up to ${INLINE_ADDRESSES} inlined addresses, oldest first, where the endpoint inlines them.`,
      }),
      hasMore: t.Optional(t.Boolean({ description: "More than the inlined addresses exist." })),
    }),
    match: MatchSchema,
    status: t.Union([t.Literal("enabled"), t.Literal("disabled")]),
    description: t.String(),
    dateCreated: t.String({ format: "date-time" }),
    dateUpdated: t.String({ format: "date-time" }),
  },
  { title: "Subscription" },
);

export const SubscriptionPageSchema = t.Object(
  {
    items: t.Array(SubscriptionSchema),
    nextPageToken: t.Optional(t.String({ description: "Absent on the last page." })),
  },
  { title: "SubscriptionPage" },
);

// One flat object for the three types (the registry checks which fields each type needs): a wrong field is then
// reported by its own pointer (/destination/subject) instead of as a mismatch of a whole union.
export const DestinationInput = InputObject({
  type: t.Union([t.Literal("https"), t.Literal("amqp"), t.Literal("nats")], {
    description: "https: url. amqp: broker, exchange, routingKey. nats: broker, subject.",
  }),
  url: t.Optional(t.String({ description: "https: HTTPS URL, publicly reachable (checked against private and reserved ranges)." })),
  broker: t.Optional(t.String({ description: "amqp, nats: the name of a broker the operator registered (never a host)." })),
  exchange: t.Optional(
    t.String({ description: 'amqp: exchange name, at most 255 of [A-Za-z0-9._:-]; "" (the default when omitted) is the default exchange.' }),
  ),
  routingKey: t.Optional(t.String({ description: "amqp: routing key, at most 255 bytes of UTF-8, no control characters; default \"\"." })),
  subject: t.Optional(
    t.String({ description: "nats: JetStream subject: '.'-separated non-empty tokens, no white space, no wildcards (* >), no '$' or '_INBOX' prefix." }),
  ),
});

export const EventsInput = t.Array(t.String(), {
  description: `Event kinds: ${EVENT_KINDS.join(", ")}. 1 to ${MAX_EVENTS} distinct entries.`,
});

export const StatusInput = t.Union([t.Literal("enabled"), t.Literal("disabled")]);

export const SubscriptionIdParams = t.Object({
  id: t.String({ pattern: "^sub_[0-9A-HJKMNP-TV-Z]{26}$", description: "Subscription id (sub_ + ULID). A malformed id is not_found." }),
});

/** `limit` and `nextPageToken` of every list (docs/CONTRACT.md "Limits", "Pagination"). */
export const PageQuery = InputObject({
  limit: t.Optional(t.Integer({ description: PAGE_LIMIT_DESCRIPTION })),
  nextPageToken: t.Optional(t.String({ description: "Opaque token from the previous page; empty or omitted for the first page." })),
});

export const IdempotencyHeaders = t.Object({
  "idempotency-key": t.Optional(
    t.String({
      description: `1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters; the same key and body within 24 h replays the first answer.`,
    }),
  ),
});

/** Error responses per status, for the OpenAPI document. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorBodySchema> {
  return Object.fromEntries(statuses.map((s) => [s, ErrorBodySchema]));
}
