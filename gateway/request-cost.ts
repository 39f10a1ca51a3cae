// How many tokens of its key's rate limit a request takes (docs/CONTRACT.md "Limits"): its operation's weight plus one
// per started 64 KiB of body beyond the first, so a PATCH of 10,000 addresses or a recover is not priced like a GET.
// Decided from the method, the path and Content-Length before the body is read: a refused request costs no parsing.
import { MAX_BODY_BYTES } from "../common/contract/index.ts";

/**
 * Body bytes one token pays for. A PATCH entry is about 74 bytes, so 10,000 addresses take 12 tokens: a key at the
 * default 50 requests/s changes at most about 40,000 addresses a second, and a burst of 100 holds eight such PATCHes.
 */
export const BODY_BYTES_PER_TOKEN = 64 * 1024;

/** Operations dearer than their body: a recover re-queues a whole time range, a search may read many index rows. */
export const OPERATION_WEIGHTS: readonly { method: string; path: RegExp; weight: number; what: string }[] = [
  { method: "POST", path: /^\/v1\/subscriptions\/[^/]+\/events\/recover$/, weight: 20, what: "POST …/events/recover" },
  { method: "GET", path: /^\/v1\/events$/, weight: 2, what: "GET /v1/events (search)" },
];

/** The tokens a request takes, at least 1. A body without Content-Length (chunked) is priced at the largest allowed. */
export function requestCost(method: string, path: string, headers: Headers): number {
  let weight = 1;
  for (const op of OPERATION_WEIGHTS) {
    if (op.method === method && op.path.test(path)) {
      weight = op.weight;
      break;
    }
  }
  const declared = headers.get("content-length");
  let bytes = 0;
  if (declared !== null) bytes = Math.min(MAX_BODY_BYTES, Math.max(0, Number(declared) || 0));
  else if (headers.has("transfer-encoding")) bytes = MAX_BODY_BYTES;
  return weight + Math.floor(Math.max(0, bytes - 1) / BODY_BYTES_PER_TOKEN);
}
