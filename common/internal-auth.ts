// The internal RPC credential. Every registry and deliverer RPC served on a port (Connect, gRPC-Web and gRPC alike)
// requires `authorization: Bearer <INTERNAL_TOKEN>`; /healthz, /readyz and /metrics are not RPCs and stay open.
// In-process calls (`npm start`) carry no token: nothing outside the process can reach them.
//
// Opting a method out: a service whose RPC authenticates its callers itself (say, with a customer API key) lists
// that method in its ServiceHandle's `publicMethods`; this interceptor then lets every call of it through untouched,
// and the method's own handler must refuse what it does not accept.
import { createHash, timingSafeEqual } from "node:crypto";
import { writeSync } from "node:fs";
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import type { Config } from "./config.ts";
import { log as rootLog, type Logger } from "./logger.ts";

/** The caller's address, set by each server (Bun.serve's requestIP, the HTTP/2 socket) for the refusal log. */
export const peerAddress = createContextKey<string>("unknown", { description: "the RPC caller's address" });

/** True when the call came over mTLS with a client certificate the configured CA verified: that is the credential. */
export const verifiedClientCertificate = createContextKey<boolean>(false, { description: "mTLS client verified" });

/** `package.Service/Method`, the name a public method is listed and logged under. */
function methodName(method: Pick<DescMethod, "name"> & { parent: { typeName: string } }): string {
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

export interface InternalAuthOptions {
  /** The credential every caller must present. */
  token: string;
  /** Methods reached without it: their handlers authenticate the caller themselves. */
  publicMethods?: readonly DescMethod[];
  logger?: Logger;
}

/**
 * Server side: refuses, as Connect `Unauthenticated` (gRPC status 16, HTTP 401), any call of a non-public method
 * without the right token, and logs the refusal with the peer address (never what was presented). The comparison
 * runs over SHA-256 digests so the lengths are equal and the time does not depend on where the bytes differ.
 */
export function requireInternalToken(opts: InternalAuthOptions): Interceptor {
  const expected = sha256(opts.token);
  const open = new Set((opts.publicMethods ?? []).map(methodName));
  const logger = opts.logger ?? rootLog;
  return (next) => async (req) => {
    const method = methodName(req.method);
    if (open.has(method) || req.contextValues.get(verifiedClientCertificate)) return next(req);
    const presented = bearerToken(req.header.get("authorization"));
    if (presented !== undefined && timingSafeEqual(sha256(presented), expected)) return next(req);
    logger.warn("internal rpc refused", {
      method,
      peer: req.contextValues.get(peerAddress),
      reason: presented === undefined ? "no credential" : "wrong credential",
    });
    throw new ConnectError("this RPC requires the internal token (authorization: Bearer <INTERNAL_TOKEN>)", Code.Unauthenticated);
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

/**
 * A service run alone (`bun run registry`, …) serves or calls internal RPCs, so it needs INTERNAL_TOKEN: without it,
 * one line on stderr naming the variable and exit code 1.
 */
export function internalTokenOrExit(config: Config, service: string): string {
  if (config.internalToken) return config.internalToken;
  // Written synchronously: the process exits on the next line and an asynchronous write to a pipe could be lost.
  writeSync(2, `${service} cannot start: set INTERNAL_TOKEN (at least 32 bytes, the same on every service; e.g. openssl rand -base64 32)\n`);
  process.exit(1);
}
