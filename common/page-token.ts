// Keyset page tokens: "v1:" + base64url(JSON payload) + "." + base64url(HMAC). The payload names the list it
// belongs to (kind, API key, parent resource), so a token altered or used on another list is rejected.
import { ApiError } from "./errors.ts";
import { hmac, safeEqual } from "./crypto.ts";

export interface PageScope {
  /** Which list: "subscriptions", "addresses", "events:<status filter>", ... */
  list: string;
  keyId: string;
  /** The parent resource (subscription id) for nested lists, "" otherwise. */
  parent: string;
}

const PREFIX = "v1:";

function invalid(): ApiError {
  return new ApiError("invalid_pagination_token", "The page token is malformed, altered or belongs to another list.");
}

export function encodePageToken(key: Buffer, scope: PageScope, cursor: unknown): string {
  const body = Buffer.from(JSON.stringify({ l: scope.list, k: scope.keyId, p: scope.parent, c: cursor })).toString("base64url");
  return `${PREFIX}${body}.${hmac(key, PREFIX + body).toString("base64url")}`;
}

/** Returns the cursor, or throws invalid_pagination_token. An empty token means "first page" (undefined). */
export function decodePageToken<T>(key: Buffer, scope: PageScope, token: string): T | undefined {
  if (token === "") return undefined;
  if (!token.startsWith(PREFIX)) throw invalid();
  const [body, sig, extra] = token.slice(PREFIX.length).split(".");
  if (!body || !sig || extra !== undefined) throw invalid();
  if (!safeEqual(hmac(key, PREFIX + body), Buffer.from(sig, "base64url"))) throw invalid();
  let payload: { l?: unknown; k?: unknown; p?: unknown; c?: unknown };
  try {
    payload = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
  } catch {
    throw invalid();
  }
  if (payload.l !== scope.list || payload.k !== scope.keyId || payload.p !== scope.parent) throw invalid();
  return payload.c as T;
}
