// `npm start`: the whole stack in one process. Each service still serves its own HTTP/gRPC ports (so operators and
// other platform services reach them as in Kubernetes), while the gateway calls them through in-process transports:
// the same handlers and serialization, no socket.
import { loadConfig } from "../common/config.ts";
import { ensureDatabase } from "../common/db.ts";
import { log } from "../common/logger.ts";
import { inProcessTransport } from "../common/rpc.ts";
import { serveService, type ServedService, type ServiceHandle } from "../common/service.ts";
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

const handles: ServiceHandle[] = [];
const served: ServedService[] = [];

const registry = await createRegistry(config);
handles.push(registry);
const registryServed = await serveService(registry, config.registryPort, config.registryGrpcPort);
served.push(registryServed);
log.info("registry listening", { port: registryServed.http.port, grpcPort: grpcPort(registryServed) });

const deliverer = await createDeliverer(config, { registry: inProcessTransport(registry.routes) });
handles.push(deliverer);
const delivererServed = await serveService(deliverer, config.delivererPort, config.delivererGrpcPort);
served.push(delivererServed);
log.info("deliverer listening", { port: delivererServed.http.port, grpcPort: grpcPort(delivererServed) });

const matcher = await createMatcher(config, { deliverer: inProcessTransport(deliverer.routes) });
handles.push(matcher);
const matcherServed = await serveService(matcher, config.matcherPort);
served.push(matcherServed);
log.info("matcher listening", { port: matcherServed.http.port, chains: config.matcherChains });

const gateway = createGatewayApp({
  config,
  registry: inProcessTransport(registry.routes),
  deliverer: inProcessTransport(deliverer.routes),
});
gateway.listen({ port: config.port, hostname: "0.0.0.0" });
log.info("gateway listening", { port: gateway.server?.port, docs: `http://127.0.0.1:${gateway.server?.port}/docs` });

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
