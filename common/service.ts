// The shape every internal service shares, so `npm start` (all in one process) and `bun run <service>` (alone)
// wire the same code: create the handle, then serve it on its ports and/or hand its routes to an in-process transport.
import type { Server } from "bun";
import { readFileSync } from "node:fs";
import type { DescMethod } from "@bufbuild/protobuf";
import { createConnectRouter, type Interceptor } from "@connectrpc/connect";
import { serveServiceHttp, type ReadinessChecks } from "./http-service.ts";
import { requireInternalCaller, type AcceptedCallers } from "./internal-auth.ts";
import { log } from "./logger.ts";
import type { Config } from "./config.ts";
import { closeGrpc, createRpcFetchHandler, serveGrpc, type GrpcServer, type GrpcTls, type RegisterRoutes } from "./rpc.ts";

export interface ServiceHandle {
  /** Registers the service's Connect handlers (empty for a service without RPCs, like the matcher). */
  routes: RegisterRoutes;
  /** What the service cannot work without: /readyz is 503 while one fails. */
  checks: ReadinessChecks;
  /** Dependencies it rides out: shown by /readyz, never a reason to be unready. */
  informational?: ReadinessChecks;
  /**
   * The callers its RPCs recognise when served on a port, each held to its methods' allow-list (see
   * common/internal-auth.ts). Absent only for a service without RPCs.
   */
  callers?: AcceptedCallers;
  /**
   * Methods served without an internal credential, because their handlers authenticate the caller themselves (e.g.
   * with a customer API key). Everything not listed requires one.
   */
  publicMethods?: readonly DescMethod[];
  /** Stops background work and closes connections. */
  close(): Promise<void>;
}

export interface ServedService {
  http: Server<undefined>;
  grpc: GrpcServer | undefined;
  stop(): Promise<void>;
}

export interface ServeOptions {
  /** The address every listener binds (BIND_HOST); default 127.0.0.1. */
  hostname?: string;
  /** mTLS on the gRPC port (a verified client certificate naming a caller is then its credential); default cleartext. */
  grpcTls?: GrpcTls;
  /** HTTPS on the Connect/health port (certificate and key, PEM); default cleartext. */
  httpTls?: { cert: string; key: string };
}

/** How a service is served from its configuration: BIND_HOST, the gRPC port's mTLS files and the HTTPS files when set. */
export function serveOptions(config: Pick<Config, "bindHost" | "grpcTls" | "internalTls">): ServeOptions {
  const files = config.grpcTls;
  const https = config.internalTls;
  const read = (path: string) => readFileSync(path, "utf8");
  return {
    hostname: config.bindHost,
    grpcTls: files && { cert: read(files.certFile), key: read(files.keyFile), clientCa: read(files.clientCaFile) },
    httpTls: https && { cert: read(https.certFile), key: read(https.keyFile) },
  };
}

/** The CA (PEM) an https:// internal URL is verified against (INTERNAL_TLS_CA_FILE); undefined: the system's only. */
export function internalCa(config: Pick<Config, "internalTlsCaFile">): string | undefined {
  return config.internalTlsCaFile === undefined ? undefined : readFileSync(config.internalTlsCaFile, "utf8");
}

/** The handle's caller check; a service with RPCs but no callers is a wiring mistake, refused before anything is served. */
function internalAuth(handle: ServiceHandle): Interceptor {
  if (handle.callers !== undefined) {
    return requireInternalCaller({ callers: handle.callers, publicMethods: handle.publicMethods });
  }
  const router = createConnectRouter();
  handle.routes(router);
  if (router.handlers.length > 0) throw new Error("serveService: a service with RPCs needs its callers");
  return (next) => next;
}

/**
 * Serves Connect/gRPC-Web + health on `httpPort` and, when given, gRPC over HTTP/2 on `grpcPort`. Every RPC but the
 * handle's public methods requires a caller's credential and its allow-list; a handle with RPCs and no callers is
 * refused.
 */
export async function serveService(handle: ServiceHandle, httpPort: number, grpcPort?: number, opts: ServeOptions = {}): Promise<ServedService> {
  const hostname = opts.hostname ?? "127.0.0.1";
  const auth = internalAuth(handle);
  const rpc = createRpcFetchHandler(handle.routes, auth);
  const http = serveServiceHttp({
    port: httpPort,
    hostname,
    readiness: { checks: handle.checks, ...(handle.informational ? { informational: handle.informational } : {}) },
    handle: rpc,
    ...(opts.httpTls ? { tls: opts.httpTls } : {}),
  });
  const grpc = grpcPort === undefined ? undefined : await serveGrpc(handle.routes, grpcPort, hostname, auth, opts.grpcTls);
  return {
    http,
    grpc,
    async stop() {
      http.stop(true);
      if (grpc) await closeGrpc(grpc);
    },
  };
}

/**
 * Stops cleanly on SIGINT/SIGTERM: runs `steps` in order (stop taking requests first, then background work and
 * connections), once, then exits.
 */
export function stopOnSignals(name: string, ...steps: Array<() => Promise<unknown>>): void {
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${name} stopping`, { signal });
    for (const step of steps) await step();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}
