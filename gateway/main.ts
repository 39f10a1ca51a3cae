// `bun run gateway`: the public API alone, as it runs in its own pod, calling the registry and the deliverer over
// the network (REGISTRY_URL, DELIVERER_URL); /readyz asks the registry to resolve a key (see readiness.ts).
import { loadConfig } from "../common/config.ts";
import { log } from "../common/logger.ts";
import { networkTransport } from "../common/rpc.ts";
import { stopOnSignals } from "../common/service.ts";
import { createGatewayApp } from "./app.ts";

const config = loadConfig();
const app = createGatewayApp({
  config,
  registry: networkTransport(config.registryUrl),
  deliverer: networkTransport(config.delivererUrl),
});
app.listen({ port: config.port, hostname: "0.0.0.0" });
log.info("gateway listening", { port: app.server?.port, registryUrl: config.registryUrl });

stopOnSignals("gateway", () => app.stop());
