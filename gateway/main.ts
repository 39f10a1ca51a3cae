// `bun run gateway`: the public API alone, as it runs in its own pod, calling the registry and the deliverer over
// the network (REGISTRY_URL, DELIVERER_URL, with its own token, INTERNAL_TOKEN_GATEWAY); /readyz asks the registry to
// resolve a key (see readiness.ts).
import { loadConfig } from "../common/config.ts";
import { callerTokenOrExit } from "../common/internal-auth.ts";
import { log } from "../common/logger.ts";
import { networkTransport } from "../common/rpc.ts";
import { internalCa, stopOnSignals } from "../common/service.ts";
import { createGatewayApp } from "./app.ts";

const config = loadConfig();
const token = callerTokenOrExit(config, "gateway");
const ca = internalCa(config);
const app = createGatewayApp({
  config,
  registry: networkTransport(config.registryUrl, { token, ca }),
  deliverer: networkTransport(config.delivererUrl, { token, ca }),
});
app.listen({ port: config.port, hostname: config.bindHost });
log.info("gateway listening", { host: config.bindHost, port: app.server?.port, registryUrl: config.registryUrl });

stopOnSignals("gateway", () => app.stop());
