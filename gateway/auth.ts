// Bearer authentication: the key is resolved by the registry (ApiKeyService.ResolveApiKey) and the answer is cached
// briefly in memory, so a hot key costs no RPC while a revocation still takes effect within a few seconds.
import { createClient, type Transport } from "@connectrpc/connect";
import { RPC_DEADLINE_MS } from "../common/deadlines.ts";
import { ApiError, fromRpcError } from "../common/errors.ts";
import { ApiKeyService } from "../gen/webhooks/registry/v1/registry_pb.ts";
import type { Principal } from "./context.ts";

export const DEFAULT_AUTH_CACHE_MS = 3_000;
// Bounded so a flood of random keys cannot grow memory without limit.
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

interface Entry {
  expiresAt: number;
  principal: Principal | null;
}

export interface Authenticator {
  /** The caller behind an Authorization header; throws unauthorized (or service_unavailable when the registry is down). */
  authenticate(header: string | null): Promise<Principal>;
  /** Drops every cached answer (tests, key management in the same process). */
  clear(): void;
}

export function createAuthenticator(registry: Transport, options: { cacheMs?: number; timeoutMs?: number } = {}): Authenticator {
  const cacheMs = options.cacheMs ?? DEFAULT_AUTH_CACHE_MS;
  const timeoutMs = options.timeoutMs ?? RPC_DEADLINE_MS;
  const keys = createClient(ApiKeyService, registry);
  const cache = new Map<string, Entry>();
  // Concurrent first requests with one key share one RPC.
  const inflight = new Map<string, Promise<Principal | null>>();

  const resolve = async (secret: string): Promise<Principal | null> => {
    let res;
    try {
      res = await keys.resolveApiKey({ secret }, { timeoutMs });
    } catch (err) {
      throw fromRpcError(err);
    }
    const principal = res.valid && res.key ? { keyId: res.key.id, chains: [...res.key.chains] } : null;
    if (cache.size >= MAX_ENTRIES) {
      const oldest = cache.keys().next();
      if (!oldest.done) cache.delete(oldest.value);
    }
    cache.set(secret, { expiresAt: Date.now() + cacheMs, principal });
    return principal;
  };

  return {
    async authenticate(header) {
      if (header === null) throw unauthorized();
      const match = BEARER.exec(header);
      const secret = match?.[1];
      if (!secret || !KEY_SHAPE.test(secret)) throw unauthorized("The API key is invalid or revoked.");
      const hit = cache.get(secret);
      let principal: Principal | null;
      if (hit !== undefined && hit.expiresAt > Date.now()) {
        principal = hit.principal;
      } else {
        let pending = inflight.get(secret);
        if (!pending) {
          pending = resolve(secret).finally(() => inflight.delete(secret));
          inflight.set(secret, pending);
        }
        principal = await pending;
      }
      if (principal === null) throw unauthorized("The API key is invalid or revoked.");
      return principal;
    },
    clear() {
      cache.clear();
    },
  };
}
