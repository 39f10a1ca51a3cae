// The limits of the public API (docs/CONTRACT.md "Limits"): the services enforce them, the gateway's schemas and
// OpenAPI document state them, the console sizes its forms and requests by them.

/** `limit` on every list: the default, and the most one page holds (above is clamped). */
export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 200;

/** Addresses inlined in a subscription where the endpoint inlines them (GET by id, rotate, address changes). */
export const INLINE_ADDRESSES = 200;
/** Address entries per request: PATCH add and remove together, PUT. */
export const MAX_ADDRESSES_PER_REQUEST = 10_000;

/** A subscription's `description`, in Unicode code points. */
export const MAX_DESCRIPTION_LENGTH = 512;
/** Distinct event kinds a subscription lists. */
export const MAX_EVENTS = 16;
/** Assets in a subscription's match conditions. */
export const MAX_MATCH_ASSETS = 100;
/** A destination URL, in characters. */
export const MAX_URL_LENGTH = 2048;

/** How long the previous signing secret keeps signing after a rotation: the default (a day) and the most (a week). */
export const DEFAULT_GRACE_SECONDS = 86_400;
export const MAX_GRACE_SECONDS = 604_800;

/** A request body, in bytes. */
export const MAX_BODY_BYTES = 1024 * 1024;
/**
 * The request target (path and query), in characters: no route needs more than a few hundred (the longest is a page
 * token). Bun's own header limit (`--max-http-header-size`, 16 KiB) stops anything longer still, with its bare 431.
 */
export const MAX_TARGET_LENGTH = 8192;
/** An Idempotency-Key, in printable ASCII characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** The part of a destination's answer kept as an event's or attempt's responseBody, in bytes. */
export const RESPONSE_BODY_LIMIT = 4096;
/** How far back recover reaches (the bound on `since`): 14 days. */
export const RECOVER_MAX_AGE_MS = 14 * 24 * 3_600_000;
