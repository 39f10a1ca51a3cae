// Internal RPC credentials and who may call what. Every registry and deliverer RPC served on a port (Connect,
// gRPC-Web and gRPC alike) identifies its caller, then checks the caller against the method's allow-list
// (METHOD_CALLERS): no or an unknown credential is Unauthenticated, a known caller outside the list PermissionDenied.
// /healthz, /readyz and /metrics are not RPCs and stay open.
//
// Callers and their credentials: each internal caller (gateway, matcher, deliverer, operator) has its own bearer
// token, INTERNAL_TOKEN_<CALLER>, or on an mTLS gRPC port a client certificate whose subject CN names it. A server
// recognises a caller by the SHA-256 of its token (INTERNAL_TOKEN_<CALLER>, or only its digest,
// INTERNAL_TOKEN_<CALLER>_SHA256, so the server cannot present it). A simple setup may instead give every service one
// root, INTERNAL_TOKEN: each caller's token is then derived from it (HKDF), and the root itself is still accepted as
// the "legacy" caller allowed everything, but only while no per-caller variable is set (a warning says so at start):
// every holder of the root can derive every caller's token, so a root shared by all pods separates nothing.
//
// In-process calls (`npm start`) carry the caller in the context values (inProcessTransport's `caller`), and the same
// allow-list applies to them.
//
// Opting a method out: a service whose RPC authenticates its callers itself (say, with a customer API key) lists
// that method in its ServiceHandle's `publicMethods`; this interceptor then lets every call of it through untouched,
// and the method's own handler must refuse what it does not accept.
import { createHash, hkdfSync, timingSafeEqual } from "node:crypto";
import { writeSync } from "node:fs";
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import type { Config } from "./config.ts";
import { INTERNAL_CALLERS, isInternalCaller, LEGACY_CALLER, tokenVariable, type Caller, type InternalCaller } from "./internal-callers.ts";
import { log as rootLog, type Logger } from "./logger.ts";

const REGISTRY = "webhooks.registry.v1";
const DELIVERY = "webhooks.delivery.v1";

/**
 * Who may call each internal method (`package.Service/Method`). A method missing here is refused to every caller on
 * a port (deny by default); `"public"` marks the one whose handler authenticates a customer API key itself.
 * The gateway gets what the public API needs, never Enqueue, delivery targets, key management or index rebuilds;
 * the matcher only Enqueue; the deliverer the targets it signs with and key resolution for StreamEvents; the
 * operator key management and rebuilds.
 */
export const METHOD_CALLERS: Readonly<Record<string, readonly InternalCaller[] | "public">> = {
  [`${REGISTRY}.SubscriptionService/CreateSubscription`]: ["gateway"],
  [`${REGISTRY}.SubscriptionService/ListSubscriptions`]: ["gateway"],
  [`${REGISTRY}.SubscriptionService/GetSubscription`]: ["gateway"],
  [`${REGISTRY}.SubscriptionService/UpdateSubscription`]: ["gateway"],
  [`${REGISTRY}.SubscriptionService/DeleteSubscription`]: ["gateway"],
  [`${REGISTRY}.SubscriptionService/RotateSecret`]: ["gateway"],
  [`${REGISTRY}.SubscriptionService/PatchAddresses`]: ["gateway"],
  [`${REGISTRY}.SubscriptionService/ReplaceAddresses`]: ["gateway"],
  [`${REGISTRY}.SubscriptionService/ListAddresses`]: ["gateway"],
  [`${REGISTRY}.SubscriptionService/GetDeliveryTargets`]: ["deliverer"],
  [`${REGISTRY}.BackfillService/CreateBackfill`]: ["gateway"],
  [`${REGISTRY}.BackfillService/ListBackfills`]: ["gateway"],
  [`${REGISTRY}.BackfillService/GetBackfill`]: ["gateway"],
  [`${REGISTRY}.BackfillService/CancelBackfill`]: ["gateway"],
  [`${REGISTRY}.ApiKeyService/CreateApiKey`]: ["operator"],
  [`${REGISTRY}.ApiKeyService/ListApiKeys`]: ["operator"],
  [`${REGISTRY}.ApiKeyService/RevokeApiKey`]: ["operator"],
  [`${REGISTRY}.ApiKeyService/SetApiKeyChains`]: ["operator"],
  [`${REGISTRY}.ApiKeyService/ResolveApiKey`]: ["gateway", "deliverer"],
  [`${REGISTRY}.ApiKeyService/CheckAuthReady`]: ["gateway"],
  [`${REGISTRY}.WatchIndexService/RebuildWatchIndex`]: ["operator"],
  [`${DELIVERY}.DeliveryService/Enqueue`]: ["matcher"],
  [`${DELIVERY}.DeliveryService/CreateTestEvent`]: ["gateway"],
  [`${DELIVERY}.DeliveryService/ListEvents`]: ["gateway"],
  [`${DELIVERY}.DeliveryService/GetEvent`]: ["gateway"],
  [`${DELIVERY}.DeliveryService/RetryEvent`]: ["gateway"],
  [`${DELIVERY}.DeliveryService/ListAttempts`]: ["gateway"],
  [`${DELIVERY}.DeliveryService/RecoverEvents`]: ["gateway"],
  [`${DELIVERY}.DeliveryService/SearchEvents`]: ["gateway"],
  [`${DELIVERY}.DeliveryService/GetHealth`]: ["gateway"],
  [`${DELIVERY}.DeliveryService/DeleteSubscriptionEvents`]: ["gateway"],
  [`${DELIVERY}.DeliveryService/StreamEvents`]: "public",
};

/** The caller a call was identified as (set by the server's check, or by the in-process transport). */
export const internalCaller = createContextKey<Caller | undefined>(undefined, { description: "the internal RPC caller" });

/** The caller's address, set by each server (Bun.serve's requestIP, the HTTP/2 socket) for the refusal log. */
export const peerAddress = createContextKey<string>("unknown", { description: "the RPC caller's address" });

/**
 * The subject CN of the client certificate the configured CA verified on an mTLS gRPC port (undefined without one):
 * naming a known caller, it is that caller's credential.
 */
export const verifiedClientCertificate = createContextKey<string | undefined>(undefined, { description: "mTLS client subject CN" });

/** `package.Service/Method`, the name a method is listed and logged under. */
export function methodName(method: Pick<DescMethod, "name"> & { parent: { typeName: string } }): string {
  return `${method.parent.typeName}/${method.name}`;
}

function sha256(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/** The token of an `authorization: Bearer <token>` header; undefined when there is none. */
export function bearerToken(header: string | null): string | undefined {
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? "");
  return match?.[1];
}

/** A caller's token derived from the root INTERNAL_TOKEN: HKDF-SHA256, one label per caller, 32 bytes base64url. */
export function derivedToken(root: string, caller: InternalCaller): string {
  return Buffer.from(hkdfSync("sha256", root, "", `tron-webhooks internal rpc: ${caller}`, 32)).toString("base64url");
}

/** What a server accepts: the SHA-256 of each known caller's token, and the root's when it is still accepted. */
export interface AcceptedCallers {
  digests: ReadonlyMap<InternalCaller, Buffer>;
  legacy?: Buffer;
}

/** Whether any per-caller variable (a token or a digest) is configured: then the root is never a credential. */
export function hasPerCallerCredentials(config: Pick<Config, "internalTokens" | "internalTokenDigests">): boolean {
  return Object.keys(config.internalTokens).length > 0 || Object.keys(config.internalTokenDigests).length > 0;
}

/**
 * The callers a server recognises: each one's own variable first (its token, else its digest), else the token derived
 * from `root` (INTERNAL_TOKEN, or the one `npm start` keeps in the database). The root itself is accepted only when
 * no per-caller variable is set.
 */
export function acceptedCallers(config: Pick<Config, "internalTokens" | "internalTokenDigests">, root: string | undefined): AcceptedCallers {
  const digests = new Map<InternalCaller, Buffer>();
  for (const caller of INTERNAL_CALLERS) {
    const token = config.internalTokens[caller];
    const digest = config.internalTokenDigests[caller];
    if (token !== undefined) digests.set(caller, sha256(token));
    else if (digest !== undefined) digests.set(caller, Buffer.from(digest, "hex"));
    else if (root !== undefined) digests.set(caller, sha256(derivedToken(root, caller)));
  }
  const legacy = root !== undefined && !hasPerCallerCredentials(config) ? sha256(root) : undefined;
  return legacy ? { digests, legacy } : { digests };
}

/** The token a service presents as `caller`: its own variable, else derived from INTERNAL_TOKEN; undefined without. */
export function callerToken(config: Pick<Config, "internalTokens" | "internalToken">, caller: InternalCaller): string | undefined {
  return config.internalTokens[caller] ?? (config.internalToken === undefined ? undefined : derivedToken(config.internalToken, caller));
}

/** Who presented `token`, comparing digests in constant time against every known one (no early exit). */
function identify(accepted: AcceptedCallers, token: string): Caller | undefined {
  const presented = sha256(token);
  let found: Caller | undefined;
  for (const [caller, digest] of accepted.digests) if (timingSafeEqual(presented, digest)) found ??= caller;
  if (accepted.legacy && timingSafeEqual(presented, accepted.legacy)) found ??= LEGACY_CALLER;
  return found;
}

/** Whether `caller` may call `method`; the legacy root may call every listed method. */
export function mayCall(caller: Caller, method: string): boolean {
  const allowed = METHOD_CALLERS[method];
  if (allowed === undefined) return false;
  if (allowed === "public" || caller === LEGACY_CALLER) return true;
  return allowed.includes(caller);
}

function permissionDenied(caller: Caller, method: string): ConnectError {
  return new ConnectError(`the ${caller} credential may not call ${method}`, Code.PermissionDenied);
}

/**
 * In-process: refuses, as `PermissionDenied`, a call `caller` may not make (the same allow-list as on a port). No
 * caller means a test or benchmark playing several parts, unchecked.
 */
export function checkInProcessCaller(caller: InternalCaller | undefined, method: string): void {
  if (caller !== undefined && !mayCall(caller, method)) throw permissionDenied(caller, method);
}

export interface InternalAuthOptions {
  /** The callers whose credentials are recognised. */
  callers: AcceptedCallers;
  /** Methods reached without a credential: their handlers authenticate the caller themselves. */
  publicMethods?: readonly DescMethod[];
  logger?: Logger;
}

/**
 * Server side: identifies the caller (bearer token, else a verified client certificate naming a caller) and checks
 * the method's allow-list. No credential or an unknown one is Connect `Unauthenticated` (gRPC 16, HTTP 401); a known
 * caller outside the allow-list is `PermissionDenied` (gRPC 7, HTTP 403). Each refusal is logged at warn with the
 * peer address and the caller (never what was presented). Token digests are compared in constant time.
 */
export function requireInternalCaller(opts: InternalAuthOptions): Interceptor {
  const open = new Set((opts.publicMethods ?? []).map(methodName));
  const logger = opts.logger ?? rootLog;
  return (next) => async (req) => {
    const method = methodName(req.method);
    if (open.has(method)) return next(req);
    const presented = bearerToken(req.header.get("authorization"));
    const subject = req.contextValues.get(verifiedClientCertificate);
    let caller: Caller | undefined;
    if (presented !== undefined) caller = identify(opts.callers, presented);
    else if (subject !== undefined && isInternalCaller(subject)) caller = subject;
    const peer = req.contextValues.get(peerAddress);
    if (caller === undefined) {
      const reason = presented !== undefined ? "wrong credential" : subject !== undefined ? "certificate names no caller" : "no credential";
      logger.warn("internal rpc refused", { method, peer, reason });
      throw new ConnectError("this RPC requires an internal credential (authorization: Bearer <INTERNAL_TOKEN_…>)", Code.Unauthenticated);
    }
    if (!mayCall(caller, method)) {
      logger.warn("internal rpc refused", { method, peer, caller, reason: "caller not allowed" });
      throw permissionDenied(caller, method);
    }
    req.contextValues.set(internalCaller, caller);
    return next(req);
  };
}

/** Client side: sends the token on every call. */
export function sendInternalToken(token: string): Interceptor {
  const value = `Bearer ${token}`;
  return (next) => (req) => {
    req.header.set("authorization", value);
    return next(req);
  };
}

/** One line on stderr and exit code 1 (written synchronously: an asynchronous write to a pipe could be lost). */
function exitWith(message: string): never {
  writeSync(2, `${message}\n`);
  process.exit(1);
}

/**
 * The token a service run alone (`bun run gateway`, …) presents as `caller`: INTERNAL_TOKEN_<CALLER>, or derived
 * from INTERNAL_TOKEN. Without either, one line on stderr naming the variables and exit code 1.
 */
export function callerTokenOrExit(config: Config, caller: InternalCaller): string {
  const token = callerToken(config, caller);
  if (token !== undefined) return token;
  exitWith(`${caller} cannot start: set ${tokenVariable(caller)} (at least 32 bytes; e.g. openssl rand -base64 32) or INTERNAL_TOKEN`);
}

/**
 * A server run alone must recognise the callers it exists for (`needs`): each one's INTERNAL_TOKEN_<CALLER> or
 * INTERNAL_TOKEN_<CALLER>_SHA256, or INTERNAL_TOKEN. Without, one line on stderr naming them and exit code 1; with the
 * root alone, a warning that it separates nothing.
 */
export function requireCallersOrExit(config: Config, service: string, needs: readonly InternalCaller[]): void {
  const accepted = acceptedCallers(config, config.internalToken);
  const missing = needs.filter((c) => !accepted.digests.has(c));
  if (missing.length > 0) {
    const names = missing.map((c) => `${tokenVariable(c)} (or ${tokenVariable(c)}_SHA256)`).join(", ");
    exitWith(`${service} cannot start: set ${names} or INTERNAL_TOKEN`);
  }
  if (accepted.legacy) {
    rootLog.warn("internal rpc: INTERNAL_TOKEN alone is configured; every service holding it can derive every caller's credential", {
      service,
      hint: "give each service only its own INTERNAL_TOKEN_<SERVICE> and the servers the callers' _SHA256 digests",
    });
  }
}
