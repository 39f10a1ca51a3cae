// One router, every protocol: Connect and gRPC-Web through a fetch handler on Bun.serve (the fast path for
// internal hops), gRPC over HTTP/2 through connect-node on node:http2 (for any real gRPC client), and an
// in-process transport for `npm start`, so single-process and split deployments run the same handlers.
import http2 from "node:http2";
import { createConnectRouter, createRouterTransport, type ConnectRouter, type Interceptor, type Transport } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { createConnectTransport } from "@connectrpc/connect-web";
import { createFetchHandler } from "@connectrpc/connect/protocol";
import { ApiError, toConnectError } from "./errors.ts";
import { log } from "./logger.ts";

export type RegisterRoutes = (router: ConnectRouter) => void;

// Handlers throw ApiError; on the wire it becomes a ConnectError carrying ErrorInfo. Anything else is logged
// (it is a bug or an outage) and passed on as Connect sees it.
const errorInterceptor: Interceptor = (next) => async (req) => {
  try {
    return await next(req);
  } catch (err) {
    if (err instanceof ApiError) throw toConnectError(err);
    log.error("rpc handler failed", { method: req.method.name, err });
    throw err;
  }
};

function routerOptions() {
  return { interceptors: [errorInterceptor] };
}

/** A fetch-style handler answering Connect and gRPC-Web for the given routes; undefined for other paths. */
export function createRpcFetchHandler(routes: RegisterRoutes): (req: Request) => Promise<Response> | undefined {
  const router = createConnectRouter(routerOptions());
  routes(router);
  const byPath = new Map<string, (req: Request) => Promise<Response>>();
  for (const handler of router.handlers) byPath.set(handler.requestPath, createFetchHandler(handler));
  return (req) => {
    const handler = byPath.get(new URL(req.url).pathname);
    return handler ? handler(req) : undefined;
  };
}

/** gRPC (HTTP/2 cleartext, prior knowledge) for platform services that speak plain gRPC. */
export function serveGrpc(routes: RegisterRoutes, port: number, hostname = "0.0.0.0"): Promise<http2.Http2Server> {
  const server = http2.createServer(connectNodeAdapter({ routes, ...routerOptions() }));
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, hostname, () => {
      server.off("error", reject);
      resolve(server);
    });
  });
}

export function closeGrpc(server: http2.Http2Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A transport to a service over the network (Connect protocol, binary, keep-alive). */
export function networkTransport(baseUrl: string, timeoutMs = 10_000): Transport {
  return createConnectTransport({ baseUrl, useBinaryFormat: true, defaultTimeoutMs: timeoutMs });
}

/** A transport to a service in this process: same handlers, same serialization, no socket. */
export function inProcessTransport(routes: RegisterRoutes): Transport {
  return createRouterTransport(routes, { router: routerOptions() });
}
