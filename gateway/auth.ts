// Bearer authentication: the key is resolved by the registry (ApiKeyService.ResolveApiKey) and the answer is cached
// briefly in memory, so a hot key costs no RPC while a revocation still takes effect within a few seconds. A lookup
// of a key not known valid is first limited per client address (client-limit.ts), so made-up keys cost no database.
import { createClient, type Transport } from "@connectrpc/connect";
import { RPC_DEADLINE_MS } from "../common/deadlines.ts";
import { ApiError } from "../common/contract/index.ts";
import { fromRpcError } from "../common/rpc-errors.ts";
import { ApiKeyService } from "../gen/webhooks/registry/v1/registry_pb.ts";
import type { ClientLimiter } from "./client-limit.ts";
import type { Principal } from "./context.ts";

export const DEFAULT_AUTH_CACHE_MS = 3_000;
// Each cache is bounded, so a flood of random keys cannot grow memory without limit.
const MAX_ENTRIES = 10_000;
// "Bearer" is case-insensitive (RFC 7235); one token, no spaces inside.
const BEARER = /^bearer +([^\s]+) *$/i;
// docs/CONTRACT.md: "whk_" + 43 base64url characters. Anything else cannot be a key, so it costs no registry call
// (a flood of made-up tokens must not become a flood of database lookups).
const KEY_SHAPE = /^whk_[A-Za-z0-9_-]{43}$/;

export const UNAUTHORIZED_HEADERS = { "www-authenticate": "Bearer" } as const;

export function unauthorized(message = "A valid API key is required in the Authorization header (Bearer)."): ApiError {
  return new ApiError("unauthorized", message);
}

interface Known {
  expiresAt: number;
  principal: Principal;
}

export interface Authenticator {
  /**
   * The caller behind an Authorization header, from the client at `address`; throws unauthorized, rate_limited (a
   * lookup of an unknown key refused for this address) or service_unavailable (the registry is down).
   */
  authenticate(header: string | null, address?: string): Promise<Principal>;
  /** Drops every cached answer (tests, key management in the same process). */
  clear(): void;
}

export interface AuthenticatorOptions {
  cacheMs?: number;
  timeoutMs?: number;
  /** Limits lookups of keys not known valid, per client address; absent means unlimited (in-process callers). */
  lookupLimiter?: ClientLimiter;
  /** Entries of each cache (valid keys, unknown keys); default 10,000. */
  maxEntries?: number;
}

/** A rate_limited error for a lookup refused by the client limiter (Retry-After is its detail). */
export function lookupLimited(retryAfterSeconds: number): ApiError {
  return new ApiError("rate_limited", "Too many requests with unknown API keys from this address; retry after the Retry-After delay.", {
    retryAfterSeconds,
  });
}

export function createAuthenticator(registry: Transport, options: AuthenticatorOptions = {}): Authenticator {
  const cacheMs = options.cacheMs ?? DEFAULT_AUTH_CACHE_MS;
  const timeoutMs = options.timeoutMs ?? RPC_DEADLINE_MS;
  const limiter = options.lookupLimiter;
  const maxEntries = options.maxEntries ?? MAX_ENTRIES;
  const keys = createClient(ApiKeyService, registry);
  // Keys seen valid, least recently used first (re-inserted on every hit): a flood of other tokens never evicts a
  // key in use. Kept past expiry, so a known key's refresh skips the client limiter; a revocation still takes
  // effect at the refresh, within cacheMs.
  const known = new Map<string, Known>();
  // Keys the registry answered invalid, briefly, apart from the valid ones so they cannot push them out.
  const unknown = new Map<string, number>();
  // Concurrent first requests with one key share one RPC.
  const inflight = new Map<string, Promise<Principal | null>>();

  const remember = <V>(map: Map<string, V>, secret: string, value: V) => {
    map.delete(secret);
    if (map.size >= maxEntries) {
      const oldest = map.keys().next();
      if (!oldest.done) map.delete(oldest.value);
    }
    map.set(secret, value);
  };

  const resolve = async (secret: string): Promise<Principal | null> => {
    let res;
    try {
      res = await keys.resolveApiKey({ secret }, { timeoutMs });
    } catch (err) {
      throw fromRpcError(err);
    }
    const principal = res.valid && res.key ? { keyId: res.key.id, chains: [...res.key.chains] } : null;
    if (principal) {
      unknown.delete(secret);
      remember(known, secret, { expiresAt: Date.now() + cacheMs, principal });
    } else {
      known.delete(secret);
      remember(unknown, secret, Date.now() + cacheMs);
    }
    return principal;
  };

  const lookup = (secret: string): Promise<Principal | null> => {
    let pending = inflight.get(secret);
    if (!pending) {
      pending = resolve(secret).finally(() => inflight.delete(secret));
      inflight.set(secret, pending);
    }
    return pending;
  };

  return {
    async authenticate(header, address) {
      if (header === null) throw unauthorized();
      const match = BEARER.exec(header);
      const secret = match?.[1];
      if (!secret || !KEY_SHAPE.test(secret)) throw unauthorized("The API key is invalid or revoked.");
      const now = Date.now();
      const hit = known.get(secret);
      let principal: Principal | null;
      if (hit !== undefined) {
        if (hit.expiresAt > now) {
          remember(known, secret, hit);
          return hit.principal;
        }
        principal = await lookup(secret);
      } else {
        const refusedUntil = unknown.get(secret);
        if (refusedUntil !== undefined && refusedUntil > now) throw unauthorized("The API key is invalid or revoked.");
        if (limiter && !inflight.has(secret)) {
          const decision = limiter.take(address);
          if (!decision.allowed) throw lookupLimited(decision.retryAfterSeconds);
        }
        principal = await lookup(secret);
      }
      if (principal === null) throw unauthorized("The API key is invalid or revoked.");
      return principal;
    },
    clear() {
      known.clear();
      unknown.clear();
    },
  };
}
