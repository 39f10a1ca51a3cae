// Idempotency-Key at the edge: validate the header, fingerprint the request (method, path and the body as parsed
// JSON, so key order and white space do not matter) and hand both to the service that owns the effect; it keeps
// the record in the same transaction as the effect and answers a replay from it.
import { create } from "@bufbuild/protobuf";
import { ApiError, invalidRequest, MAX_IDEMPOTENCY_KEY_LENGTH } from "../common/contract/index.ts";
import { sha256Hex } from "../common/crypto.ts";
import { IdempotencyRequestSchema, type IdempotencyRequest, type IdempotencyResult } from "../gen/webhooks/common/v1/error_pb.ts";
import { stateOf } from "./context.ts";

export const IDEMPOTENCY_HEADER = "idempotency-key";
export const REPLAYED_HEADER = "idempotent-replayed";

const PRINTABLE_ASCII = new RegExp(`^[\\x20-\\x7e]{1,${MAX_IDEMPOTENCY_KEY_LENGTH}}$`);

/** The header's value, undefined when absent; a malformed one is invalid_request naming the header. */
export function readIdempotencyKey(headers: Headers): string | undefined {
  const key = headers.get(IDEMPOTENCY_HEADER);
  if (key === null) return undefined;
  if (!PRINTABLE_ASCII.test(key)) {
    throw invalidRequest(`Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters.`, "Idempotency-Key");
  }
  return key;
}

/** JSON with object keys sorted at every depth: equal parsed bodies give equal text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(",")}}`;
}

export function requestHash(method: string, path: string, canonicalBody: string): string {
  return sha256Hex(`${method.toUpperCase()}\n${path}\n${canonicalBody}`);
}

/**
 * The IdempotencyRequest for an RPC, or undefined without the header. An absent body fingerprints as `{}`: for the
 * POSTs whose body is optional, no body and an empty object mean the same request.
 */
export function idempotencyFor(request: Request, path: string): IdempotencyRequest | undefined {
  const key = readIdempotencyKey(request.headers);
  if (key === undefined) return undefined;
  const state = stateOf(request);
  return create(IdempotencyRequestSchema, {
    key,
    requestHash: requestHash(request.method, path, state?.canonicalBody ?? "{}"),
    requestId: state?.requestId ?? "",
  });
}

/** Headers that mark a stored response returned again. */
export function replayHeaders(result: IdempotencyResult | undefined): Record<string, string> {
  return result?.replayed ? { [REPLAYED_HEADER]: "true" } : {};
}
