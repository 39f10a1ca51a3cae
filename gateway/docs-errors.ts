// The error answers of the OpenAPI document: for each operation and status, the codes it can give, each with an
// example body in the one error shape (docs/CONTRACT.md "HTTP conventions"). Codes and statuses come from
// common/contract/errors.ts, so a code renamed or moved to another status fails the type check or the document test.
import {
  ERROR_STATUS,
  internalError,
  MAX_ADDRESSES_PER_REQUEST,
  MAX_BODY_BYTES,
  MAX_DESCRIPTION_LENGTH,
  MAX_TARGET_LENGTH,
  notFound,
  serviceUnavailable,
  TRON_CHAINS,
  type ErrorCode,
  type ErrorDetail,
} from "../common/contract/index.ts";
import { SSRF_ALLOW_HINT } from "../common/ssrf.ts";

const REQUEST_ID = "7f1c2d3e-4b5a-4c6d-8e9f-0a1b2c3d4e5f";

const EXAMPLES: Record<ErrorCode, { message: string; detail: ErrorDetail }> = {
  invalid_request: { message: "The field /destination/url is required.", detail: { param: "/destination/url" } },
  ssrf_blocked: {
    message: `The destination resolves to 10.0.0.5, in the non-public range 10.0.0.0/8. ${SSRF_ALLOW_HINT}`,
    detail: { ip: "10.0.0.5", cidr: "10.0.0.0/8" },
  },
  unsupported_event: { message: 'The event kind "wallet.transfer.pending" is not supported.', detail: { event: "wallet.transfer.pending" } },
  description_too_long: {
    message: `description must be at most ${MAX_DESCRIPTION_LENGTH} characters.`,
    detail: { max: MAX_DESCRIPTION_LENGTH },
  },
  invalid_pagination_token: { message: "The page token is malformed, altered or belongs to another list.", detail: null },
  invalid_address: {
    message: "Not a base58check TRON address (34 characters, version byte 0x41, valid checksum).",
    detail: { index: 0, input: { chainId: "tron:mainnet", address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u" } },
  },
  invalid_chain: {
    message: `"tron:testnet" is not one of ${TRON_CHAINS.join(", ")}.`,
    detail: { index: 0, input: { chainId: "tron:testnet", address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t" } },
  },
  chain_not_enabled: {
    message: "tron:nile is not enabled for this API key.",
    detail: { index: 0, input: { chainId: "tron:nile", address: "TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8" } },
  },
  addresses_limit_exceeded: {
    message: `A request may carry at most ${MAX_ADDRESSES_PER_REQUEST} address entries (add and remove together).`,
    detail: { limit: MAX_ADDRESSES_PER_REQUEST, count: MAX_ADDRESSES_PER_REQUEST + 1 },
  },
  unauthorized: { message: "A valid API key is required.", detail: null },
  quota_exceeded: { message: "This API key's subscriptions quota is 10000.", detail: { quota: "subscriptions", limit: 10000 } },
  not_found: { message: notFound().message, detail: null },
  method_not_allowed: { message: "This path accepts GET, PUT, DELETE only.", detail: null },
  idempotency_in_flight: { message: "A request with this Idempotency-Key is still being processed; retry shortly.", detail: null },
  idempotency_conflict: { message: "This Idempotency-Key was already used with a different request; use a new key for a new request.", detail: null },
  event_not_retryable: { message: "The event is still pending; only delivered or failed events can be retried.", detail: null },
  subscription_disabled: { message: "The subscription is disabled; enable it before sending or retrying events.", detail: null },
  payload_too_large: { message: `The request body exceeds ${MAX_BODY_BYTES} bytes.`, detail: null },
  unsupported_media_type: { message: "Request bodies must be sent with Content-Type: application/json.", detail: null },
  uri_too_long: { message: `The request target is longer than ${MAX_TARGET_LENGTH} characters.`, detail: { limit: MAX_TARGET_LENGTH } },
  rate_limited: { message: "Too many requests for this API key; retry after the Retry-After delay.", detail: { retryAfterSeconds: 1 } },
  internal_error: { message: internalError().message, detail: null },
  service_unavailable: { message: serviceUnavailable().message, detail: null },
};

/** Codes every authenticated operation can answer, whatever its own rules. */
const COMMON: ErrorCode[] = ["unauthorized", "uri_too_long", "rate_limited", "service_unavailable"];
/** A request with a body: its size, media type and JSON shape. */
export const BODY: ErrorCode[] = ["invalid_request", "payload_too_large", "unsupported_media_type"];
export const IDEMPOTENT: ErrorCode[] = ["idempotency_in_flight", "idempotency_conflict", "invalid_request"];
export const URL_POLICY: ErrorCode[] = ["ssrf_blocked", "unsupported_event", "description_too_long"];
export const PAGE: ErrorCode[] = ["invalid_request", "invalid_pagination_token"];

export interface ErrorResponseObject {
  description: string;
  headers?: Record<string, unknown>;
  content: { "application/json": { schema: { $ref: string }; examples: Record<string, { summary: string; value: unknown }> } };
}

const RETRY_AFTER = {
  "Retry-After": { description: "Seconds to wait before the next request.", schema: { type: "integer", minimum: 1 } },
};

/** Every code answered with one of `statuses`: the fallback for an operation that lists no codes of its own. */
function codesOfStatuses(statuses: readonly number[]): ErrorCode[] {
  return (Object.keys(ERROR_STATUS) as ErrorCode[]).filter((c) => statuses.includes(ERROR_STATUS[c]) && c !== "internal_error");
}

/**
 * The error responses of one /v1 operation by status: the codes listed in the description and one example per code,
 * every body a reference to the shared error schema. Without codes of its own (`own`, from its file in
 * gateway/routes/), an operation lists every code of the statuses its route declares.
 */
export function errorResponsesFor(
  own: readonly ErrorCode[] | undefined,
  errorSchemaRef: string,
  declared: readonly number[],
): Record<string, ErrorResponseObject> {
  const codes = [...new Set([...(own ?? codesOfStatuses(declared)), ...COMMON])];
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  const out: Record<string, ErrorResponseObject> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    out[String(status)] = {
      description: `Error codes: ${list.join(", ")}.`,
      ...(status === 429 ? { headers: RETRY_AFTER } : {}),
      content: {
        "application/json": {
          schema: { $ref: errorSchemaRef },
          examples: Object.fromEntries(
            list.map((code) => [
              code,
              { summary: code, value: { error: code, message: EXAMPLES[code].message, detail: EXAMPLES[code].detail, requestId: REQUEST_ID } },
            ]),
          ),
        },
      },
    };
  }
  return out;
}
