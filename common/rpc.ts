// One router, every protocol: Connect and gRPC-Web through a fetch handler on Bun.serve (the fast path for
// internal hops), gRPC over HTTP/2 through connect-node on node:http2 (for any real gRPC client), and an
// in-process transport for `npm start`, so single-process and split deployments run the same handlers.
import http2 from "node:http2";
import type { TLSSocket } from "node:tls";
import { create, type DescMessage, type DescService } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createConnectRouter,
  createContextValues,
  createRouterTransport,
  createServiceImplSpec,
  type ConnectRouter,
  type HandlerContext,
  type Interceptor,
  type ServiceImpl,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { createConnectTransport } from "@connectrpc/connect-web";
import { universalServerRequestFromFetch, universalServerResponseToFetch, type UniversalHandler } from "@connectrpc/connect/protocol";
import { BACKGROUND_RPC_DEADLINE_MS } from "./deadlines.ts";
import { ApiError } from "./contract/index.ts";
import { toConnectError } from "./rpc-errors.ts";
import {
  checkInProcessCaller,
  internalCaller,
  peerAddress,
  sendInternalToken,
  verifiedClientCertificate,
} from "./internal-auth.ts";
import type { InternalCaller } from "./internal-callers.ts";
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

// `auth` (the caller and allow-list check, common/internal-auth.ts) runs first, so a refused call never reaches a handler
// and is not logged as a handler failure. In-process calls have none.
function routerOptions(auth?: Interceptor) {
  return { interceptors: auth ? [auth, errorInterceptor] : [errorInterceptor] };
}

/** An RPC request as the Bun server sees it, with the caller's address (for the refusal log). */
export type RpcFetchHandler = (req: Request, peer?: string) => Promise<Response> | undefined;

/** A fetch-style handler answering Connect and gRPC-Web for the given routes; undefined for other paths. */
export function createRpcFetchHandler(routes: RegisterRoutes, auth: Interceptor): RpcFetchHandler {
  const router = createConnectRouter(routerOptions(auth));
  routes(router);
  const byPath = new Map<string, UniversalHandler>();
  for (const handler of router.handlers) byPath.set(handler.requestPath, handler);
  return (req, peer) => {
    const handler = byPath.get(new URL(req.url).pathname);
    if (!handler) return undefined;
    // createFetchHandler, plus the peer address in the context values.
    const uReq = { ...universalServerRequestFromFetch(req, {}), contextValues: createContextValues().set(peerAddress, peer ?? "unknown") };
    return handler(uReq).then(universalServerResponseToFetch);
  };
}

/** PEM material of an mTLS gRPC port: its certificate and key, and the CA its clients' certificates must chain to. */
export interface GrpcTls {
  cert: string;
  key: string;
  clientCa: string;
}

export type GrpcServer = http2.Http2Server | http2.Http2SecureServer;

/**
 * gRPC for platform services that speak plain gRPC: HTTP/2 cleartext (prior knowledge), or with `tls` HTTP/2 over
 * TLS that only clients with a certificate from `tls.clientCa` can connect to (their certificate's subject CN names
 * the caller, and is its credential).
 */
export function serveGrpc(routes: RegisterRoutes, port: number, hostname: string, auth: Interceptor, tls?: GrpcTls): Promise<GrpcServer> {
  const handler = connectNodeAdapter({
    routes,
    ...routerOptions(auth),
    contextValues: (req) => {
      const socket = req.socket as Partial<TLSSocket> | undefined;
      const verified = tls !== undefined && socket?.authorized === true;
      const cn = verified ? socket?.getPeerCertificate?.()?.subject?.CN : undefined;
      return createContextValues()
        .set(peerAddress, socket?.remoteAddress ?? "unknown")
        .set(verifiedClientCertificate, typeof cn === "string" ? cn : undefined);
    },
  });
  const server = tls
    ? http2.createSecureServer({ cert: tls.cert, key: tls.key, ca: tls.clientCa, requestCert: true, rejectUnauthorized: true }, handler)
    : http2.createServer(handler);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, hostname, () => {
      server.off("error", reject);
      resolve(server);
    });
  });
}

export function closeGrpc(server: GrpcServer): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

// fetch reports a service it cannot reach (refused, reset, unreachable) as a TypeError, which Connect passes on as
// Code.Unknown; callers must see it for what it is, Unavailable, so the public answer is 503 and never 500.
const unreachableAsUnavailable: Interceptor = (next) => async (req) => {
  try {
    return await next(req);
  } catch (err) {
    const ce = ConnectError.from(err);
    const cause = ce.cause as { code?: unknown; message?: unknown } | undefined;
    const network = cause instanceof TypeError || /^E[A-Z]+|ConnectionRefused|ConnectionClosed/.test(String(cause?.code ?? ""));
    if (ce.code === Code.Unknown && network) {
      throw new ConnectError(`${req.service.typeName} is unreachable: ${ce.rawMessage}`, Code.Unavailable, undefined, undefined, err);
    }
    throw err;
  }
};

export interface NetworkTransportOptions {
  /** The caller's own token sent on every call (INTERNAL_TOKEN_<CALLER>, or derived from INTERNAL_TOKEN). */
  token: string | undefined;
  timeoutMs?: number;
  /** PEM CA an https:// base URL's certificate is verified against (INTERNAL_TLS_CA_FILE), beside the system's. */
  ca?: string;
}

/** Bun's fetch, verifying the server against `ca` (its `tls` init option). */
function fetchTrusting(ca: string): typeof globalThis.fetch {
  const trusting = (input: string | URL | Request, init?: RequestInit) => fetch(input, { ...init, tls: { ca } } as RequestInit);
  return Object.assign(trusting, { preconnect: fetch.preconnect });
}

/** A transport to a service over the network (Connect protocol, binary, keep-alive; TLS for an https:// URL). */
export function networkTransport(baseUrl: string, opts: NetworkTransportOptions): Transport {
  return createConnectTransport({
    baseUrl,
    ...(opts.ca !== undefined ? { fetch: fetchTrusting(opts.ca) } : {}),
    useBinaryFormat: true,
    defaultTimeoutMs: opts.timeoutMs ?? BACKGROUND_RPC_DEADLINE_MS,
    interceptors: opts.token === undefined ? [unreachableAsUnavailable] : [unreachableAsUnavailable, sendInternalToken(opts.token)],
  });
}

type UnaryHandler = (request: UnaryRequest) => Promise<UnaryResponse>;

/**
 * A transport to a service in this process: same handlers, same interceptors, messages built with create() from
 * the same generated schemas, no socket and no serialization. Unary calls invoke the handler directly (Connect's
 * router transport emulates HTTP streams and encodes every message, which cost more than the handlers themselves on
 * the API's hot path); streaming calls go through that router transport. Messages are not deep-copied (a repeated
 * field may share the caller's array): neither side mutates what it passed or received.
 *
 * `caller` is who calls through this transport: it is set in the handlers' context values and held to the same
 * allow-list as on a port (PermissionDenied). Without it the calls are unchecked: for tests and benchmarks that play
 * several parts, never for the services' own wiring.
 */
export function inProcessTransport(routes: RegisterRoutes, caller?: InternalCaller): Transport {
  const fallback = createRouterTransport(routes, { router: routerOptions() });
  // When each call must be answered by (Date.now() ms), for the handler's ctx.timeoutMs().
  const deadlines = new WeakMap<UnaryRequest, number>();
  const unary = new Map<string, UnaryHandler>();
  const register = (service: DescService, impl: Partial<ServiceImpl<DescService>>) => {
    for (const spec of Object.values(createServiceImplSpec(service, impl).methods)) {
      if (spec.kind !== "unary") continue;
      const call = spec.impl;
      const handler: UnaryHandler = async (req) => {
        // Built directly (createHandlerContext would link another controller and copy the headers again).
        const deadlineAt = deadlines.get(req);
        const ctx: HandlerContext = {
          service,
          method: spec.method,
          protocolName: "in-process",
          requestMethod: "POST",
          url: req.url,
          signal: req.signal,
          timeoutMs: () => (deadlineAt === undefined ? undefined : deadlineAt - Date.now()),
          requestHeader: req.header,
          responseHeader: new Headers(),
          responseTrailer: new Headers(),
          values: req.contextValues,
        };
        const output = await call(req.message, ctx);
        const message = create(spec.method.output, output);
        return { stream: false, service, method: spec.method, header: ctx.responseHeader, trailer: ctx.responseTrailer, message };
      };
      // The server-side interceptors, as the router applies them (ApiError → ConnectError with ErrorInfo).
      unary.set(`${service.typeName}/${spec.method.name}`, errorInterceptor(handler as never) as UnaryHandler);
    }
  };
  const capture = {
    service(service: DescService, impl: Partial<ServiceImpl<DescService>>) {
      register(service, impl);
      return capture;
    },
  };
  routes(capture as unknown as ConnectRouter);

  return {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      checkInProcessCaller(caller, `${method.parent.typeName}/${method.name}`);
      const handler = unary.get(`${method.parent.typeName}/${method.name}`);
      if (!handler) return fallback.unary(method, signal, timeoutMs, header, input, (contextValues ?? createContextValues()).set(internalCaller, caller));
      const message = create(method.input as DescMessage, input as never);
      const hasDeadline = timeoutMs !== undefined && timeoutMs > 0;
      // One controller per call carries both the caller's cancellation and the deadline to the handler.
      const controller = new AbortController();
      const request: UnaryRequest = {
        stream: false,
        service: method.parent,
        method: method as never,
        requestMethod: "POST",
        url: `in-process:///${method.parent.typeName}/${method.name}`,
        signal: controller.signal,
        header: new Headers(header),
        contextValues: (contextValues ?? createContextValues()).set(internalCaller, caller),
        message,
      };
      if (hasDeadline) deadlines.set(request, Date.now() + timeoutMs);
      if (!hasDeadline && !signal) return (await handler(request)) as never;
      // A deadline or a cancellation answers the caller at once, as it would over the network.
      return (await new Promise<UnaryResponse>((resolve, reject) => {
        const fail = (err: ConnectError) => {
          controller.abort(err);
          reject(err);
        };
        const onCancel = () => fail(new ConnectError("the operation was aborted", Code.Canceled));
        if (signal?.aborted) return onCancel();
        signal?.addEventListener("abort", onCancel, { once: true });
        const timer = hasDeadline ? setTimeout(() => fail(new ConnectError("the operation timed out", Code.DeadlineExceeded)), timeoutMs) : undefined;
        handler(request)
          .then(resolve, reject)
          .finally(() => {
            clearTimeout(timer);
            signal?.removeEventListener("abort", onCancel);
          });
      })) as never;
    },
    stream(method, signal, timeoutMs, header, input, contextValues) {
      try {
        checkInProcessCaller(caller, `${method.parent.typeName}/${method.name}`);
      } catch (err) {
        return Promise.reject(err);
      }
      return fallback.stream(method, signal, timeoutMs, header, input, (contextValues ?? createContextValues()).set(internalCaller, caller));
    },
  };
}
