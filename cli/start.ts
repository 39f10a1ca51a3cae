// `npm start`: the whole stack in one process. The gateway calls the registry and the deliverer through in-process
// transports (the same handlers, no socket), so by default their RPC ports are not served at all: nothing to reach,
// nothing to protect. INTERNAL_RPC=1, or a service's port variable, serves that service's Connect/gRPC ports too
// (every RPC then requires a caller's credential: its INTERNAL_TOKEN_<CALLER>, or one derived from INTERNAL_TOKEN or
// from the root generated and kept in the database). Each in-process transport names its caller, so the allow-lists
// of common/internal-auth.ts hold in one process too.
// The gateway's /readyz resolves a key through the registry (authentication reaching PostgreSQL) and shows Redis and
// the deliverer beside it; its /metrics is the process's one Prometheus registry (every service's metrics); the matcher keeps its own health port (MATCHER_PORT), because its
// readiness (a TRON node answering) must not take the API out of rotation. Every listener binds BIND_HOST.
import { loadConfig } from "../common/config.ts";
import { ensureDatabase } from "../common/db.ts";
import { log } from "../common/logger.ts";
import { inProcessTransport } from "../common/rpc.ts";
import { serveOptions, serveService, type ServedService, type ServiceHandle } from "../common/service.ts";
import { createDeliverer } from "../deliverer/index.ts";
import { createMatcher } from "../matcher/index.ts";
import { createGatewayApp } from "../gateway/app.ts";
import { createRegistry } from "../registry/index.ts";

/** The port actually bound (the configured one, or the one picked for port 0). */
function grpcPort(s: ServedService): number | undefined {
  const address = s.grpc?.address();
  return typeof address === "object" && address ? address.port : undefined;
}

const config = loadConfig();
await ensureDatabase(config.databaseUrl);
const host = config.bindHost;
const serving = serveOptions(config);

const handles: ServiceHandle[] = [];
const served: ServedService[] = [];

/** Serves a service's RPC ports only when asked (config.internalRpc); logs where it runs either way. */
async function serveInternal(name: string, handle: ServiceHandle, asked: boolean, httpPort: number, grpc: number): Promise<void> {
  if (!asked) {
    log.info(`${name} running in-process`, { rpcPorts: "none (INTERNAL_RPC=1 serves them)" });
    return;
  }
  const s = await serveService(handle, httpPort, grpc, serving);
  served.push(s);
  log.info(`${name} listening`, { host, port: s.http.port, grpcPort: grpcPort(s) });
}

const registry = await createRegistry(config);
handles.push(registry);
await serveInternal("registry", registry, config.internalRpc.registry, config.registryPort, config.registryGrpcPort);

const deliverer = await createDeliverer(config, { registry: inProcessTransport(registry.routes, "deliverer") });
handles.push(deliverer);
await serveInternal("deliverer", deliverer, config.internalRpc.deliverer, config.delivererPort, config.delivererGrpcPort);

const matcher = await createMatcher(config, { deliverer: inProcessTransport(deliverer.routes, "matcher") });
handles.push(matcher);
const matcherServed = await serveService(matcher, config.matcherPort, undefined, serving);
served.push(matcherServed);
log.info("matcher listening", { host, port: matcherServed.http.port, chains: config.matcherChains });

const gateway = createGatewayApp({
  config,
  registry: inProcessTransport(registry.routes, "gateway"),
  deliverer: inProcessTransport(deliverer.routes, "gateway"),
});
gateway.listen({ port: config.port, hostname: host });
log.info("gateway listening", { host, port: gateway.server?.port, docs: `http://127.0.0.1:${gateway.server?.port}/docs` });

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  log.info("stopping", { signal });
  // Stop taking requests first, then the services behind them, newest first.
  await gateway.stop();
  for (const s of served.reverse()) await s.stop();
  for (const h of handles.reverse()) await h.close();
  process.exit(0);
}
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
