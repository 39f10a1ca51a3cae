// The public JSON shapes as Elysia schemas: they validate requests and write the OpenAPI document.
// Only shape (types, required fields, enums) is checked here; the rules with their own error codes
// (events, description length, URL policy) belong to the registry.
import { t, type TSchema } from "elysia";

type ObjectOptions = NonNullable<Parameters<typeof t.Object>[1]>;
type TProperties = Record<string, TSchema>;

/**
 * An object of a request (body or query): unknown fields are ignored (CONTRACT.md), never rejected. Use it for
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
    chainId: t.String({ description: "CAIP-2 chain id: tron:mainnet, tron:nile or tron:shasta.", examples: ["tron:mainnet"] }),
    address: t.String({ description: "Base58check TRON address (T...).", examples: ["TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"] }),
  },
  { title: "AddressEntry" },
);

export const SubscriptionSchema = t.Object(
  {
    id: t.String({ description: "sub_ + ULID." }),
    destination: t.Object({
      type: t.Literal("https"),
      // No `format` check on the way out: a response is never refused over a stored URL (rows written before URLs
      // were normalized may hold forms a strict URI check rejects), so a list or GET always renders.
      url: t.String({ description: "The destination URL in its normalized form (WHATWG URL href), exactly as stored." }),
      secret: t.Optional(
        t.String({ description: "whsec_ signing secret: only in the create and secret-rotation responses." }),
      ),
    }),
    events: t.Array(t.String()),
    filters: t.Object({
      addresses: t.Array(AddressEntrySchema, { description: "Up to 200 inlined addresses, oldest first, where the endpoint inlines them." }),
      hasMore: t.Optional(t.Boolean({ description: "More than the inlined addresses exist." })),
    }),
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

export const DestinationInput = InputObject({
  type: t.Literal("https", { description: "Only https is supported." }),
  url: t.String({ description: "HTTPS URL, publicly reachable (checked against private and reserved ranges)." }),
});

export const EventsInput = t.Array(t.String(), {
  description: "Event kinds: wallet.transfer.broadcasted, service.ping. 1 to 16 distinct entries.",
});

export const StatusInput = t.Union([t.Literal("enabled"), t.Literal("disabled")]);

export const SubscriptionIdParams = t.Object({
  id: t.String({ pattern: "^sub_[0-9A-HJKMNP-TV-Z]{26}$", description: "Subscription id (sub_ + ULID). A malformed id is not_found." }),
});

export const PageQuery = InputObject({
  limit: t.Optional(t.Integer({ description: "1 to 200, default 50; above 200 is clamped to 200." })),
  nextPageToken: t.Optional(t.String({ description: "Opaque token from the previous page; empty or omitted for the first page." })),
});

export const IdempotencyHeaders = t.Object({
  "idempotency-key": t.Optional(
    t.String({ description: "1 to 255 printable ASCII characters; the same key and body within 24 h replays the first answer." }),
  ),
});

/** Error responses per status, for the OpenAPI document. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorBodySchema> {
  return Object.fromEntries(statuses.map((s) => [s, ErrorBodySchema]));
}
