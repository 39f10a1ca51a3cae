// The shape every internal service shares, so `npm start` (all in one process) and `bun run <service>` (alone)
// wire the same code: create the handle, then serve it on its ports and/or hand its routes to an in-process transport.
import type { Server } from "bun";
import type http2 from "node:http2";
import { serveServiceHttp, type ReadinessChecks } from "./http-service.ts";
import { log } from "./logger.ts";
import { closeGrpc, createRpcFetchHandler, serveGrpc, type RegisterRoutes } from "./rpc.ts";

export interface ServiceHandle {
  /** Registers the service's Connect handlers (empty for a service without RPCs, like the matcher). */
  routes: RegisterRoutes;
  /** What the service cannot work without: /readyz is 503 while one fails. */
  checks: ReadinessChecks;
  /** Dependencies it rides out: shown by /readyz, never a reason to be unready. */
  informational?: ReadinessChecks;
  /** Stops background work and closes connections. */
  close(): Promise<void>;
}

export interface ServedService {
  http: Server<undefined>;
  grpc: http2.Http2Server | undefined;
  stop(): Promise<void>;
}

/** Serves Connect/gRPC-Web + health on `httpPort` and, when given, gRPC over HTTP/2 on `grpcPort`. */
export async function serveService(handle: ServiceHandle, httpPort: number, grpcPort?: number): Promise<ServedService> {
  const rpc = createRpcFetchHandler(handle.routes);
  const http = serveServiceHttp({
    port: httpPort,
    readiness: { checks: handle.checks, ...(handle.informational ? { informational: handle.informational } : {}) },
    handle: rpc,
  });
  const grpc = grpcPort === undefined ? undefined : await serveGrpc(handle.routes, grpcPort);
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
