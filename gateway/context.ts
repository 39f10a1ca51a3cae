// What the gateway learns about a request before its route runs (request id, caller, idempotency hash input),
// kept beside the Request object so every hook, route plugin and error handler reads the same facts.
import { ApiError } from "../common/contract/index.ts";

export interface Principal {
  /** The API key's id ("key_..."): every RPC acts for it. */
  keyId: string;
  /** The key's enabled chains, in the key's order. */
  chains: readonly string[];
}

export interface RequestState {
  requestId: string;
  /** performance.now() when the request arrived (latency histogram). */
  startedAt: number;
  principal: Principal | undefined;
  /** Canonical JSON of the parsed body, captured only when an Idempotency-Key came with the request. */
  canonicalBody: string | undefined;
}

const states = new WeakMap<Request, RequestState>();

export function beginRequest(request: Request, requestId: string): RequestState {
  const state: RequestState = { requestId, startedAt: performance.now(), principal: undefined, canonicalBody: undefined };
  states.set(request, state);
  return state;
}

export function stateOf(request: Request): RequestState | undefined {
  return states.get(request);
}

/** The authenticated caller. Routes under /v1 only run after authentication, so a missing one is a wiring bug. */
export function principalOf(request: Request): Principal {
  const principal = states.get(request)?.principal;
  if (!principal) throw new ApiError("unauthorized", "A valid API key is required.");
  return principal;
}

export function requestIdOf(request: Request): string {
  return states.get(request)?.requestId ?? "";
}

/** The length of the request target (path and query) of a request URL, without parsing it. */
export function targetLength(url: string): number {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  return start === -1 ? 1 : url.length - start;
}

/** The path part of a request URL, without parsing the whole URL (hot path). */
export function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start === -1) return "/";
  const q = url.indexOf("?", start);
  return q === -1 ? url.slice(start) : url.slice(start, q);
}
