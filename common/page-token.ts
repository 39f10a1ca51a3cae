// The paging rule of every list (docs/CONTRACT.md "Limits" and "Pagination"): the `limit` bounds and their error,
// and keyset page tokens: "v1:" + base64url(JSON payload) + "." + base64url(HMAC). The payload names the list it
// belongs to (kind, API key, parent resource), so a token altered or used on another list is rejected. The newest key
// of APP_SECRET's keyring signs; any key of it verifies, so a token outlives a key rollout.
import { ApiError, DEFAULT_PAGE_LIMIT, invalidRequest, MAX_PAGE_LIMIT } from "./contract/index.ts";
import { hmac, safeEqual } from "./crypto.ts";
import type { TokenKeys } from "./keyring.ts";

export interface PageScope {
  /** Which list: "subscriptions", "addresses", "events:<status filter>", ... */
  list: string;
  keyId: string;
  /** The parent resource (subscription id) for nested lists, "" otherwise. */
  parent: string;
}

/** How the public API describes `limit` (query parameter and OpenAPI). */
export const PAGE_LIMIT_DESCRIPTION = `1 to ${MAX_PAGE_LIMIT}, default ${DEFAULT_PAGE_LIMIT}; above ${MAX_PAGE_LIMIT} is clamped to ${MAX_PAGE_LIMIT}.`;

function invalidLimit(): ApiError {
  return invalidRequest(`limit must be an integer from 1 to ${MAX_PAGE_LIMIT}.`, "limit");
}

/**
 * `limit` as an HTTP query gives it, for the RPC request: absent is 0 (the RPC's "default"), below 1 or not an
 * integer is invalid_request, above the maximum is clamped.
 */
export function queryPageLimit(limit: number | undefined): number {
  if (limit === undefined) return 0;
  if (!Number.isInteger(limit) || limit < 1) throw invalidLimit();
  return Math.min(limit, MAX_PAGE_LIMIT);
}

/** `limit` of a list RPC: 0 (unset) is the default, above the maximum is clamped, negative is invalid_request. */
export function pageLimit(limit: number): number {
  if (limit === 0) return DEFAULT_PAGE_LIMIT;
  if (!Number.isInteger(limit) || limit < 0) throw invalidLimit();
  return Math.min(limit, MAX_PAGE_LIMIT);
}

const PREFIX = "v1:";

function invalid(): ApiError {
  return new ApiError("invalid_pagination_token", "The page token is malformed, altered or belongs to another list.");
}

export function encodePageToken(keys: TokenKeys, scope: PageScope, cursor: unknown): string {
  const body = Buffer.from(JSON.stringify({ l: scope.list, k: scope.keyId, p: scope.parent, c: cursor })).toString("base64url");
  return `${PREFIX}${body}.${hmac(keys[0]!, PREFIX + body).toString("base64url")}`;
}

/**
 * A page from the `limit + 1` rows a keyset query read: the first `limit`, and the token of the page after the
 * last of them ("" when no further row was read).
 */
export function pageOf<R, C>(keys: TokenKeys, scope: PageScope, rows: readonly R[], limit: number, cursorOf: (last: R) => C): { items: R[]; nextPageToken: string } {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, nextPageToken: rows.length > limit && last !== undefined ? encodePageToken(keys, scope, cursorOf(last)) : "" };
}

/**
 * Returns the cursor, or throws invalid_pagination_token (also for a signed payload `isCursor` does not accept).
 * An empty token means "first page" (undefined).
 */
export function decodePageToken<T>(keys: TokenKeys, scope: PageScope, token: string, isCursor: (c: unknown) => c is T): T | undefined {
  if (token === "") return undefined;
  if (!token.startsWith(PREFIX)) throw invalid();
  const [body, sig, extra] = token.slice(PREFIX.length).split(".");
  if (!body || !sig || extra !== undefined) throw invalid();
  const signature = Buffer.from(sig, "base64url");
  if (!keys.some((key) => safeEqual(hmac(key, PREFIX + body), signature))) throw invalid();
  let payload: { l?: unknown; k?: unknown; p?: unknown; c?: unknown };
  try {
    payload = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
  } catch {
    throw invalid();
  }
  if (payload.l !== scope.list || payload.k !== scope.keyId || payload.p !== scope.parent) throw invalid();
  if (!isCursor(payload.c)) throw invalid();
  return payload.c;
}
