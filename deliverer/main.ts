// `bun run deliverer`: the deliverer alone, as it runs in its own pod (Connect + health/metrics on DELIVERER_PORT,
// gRPC on DELIVERER_GRPC_PORT). It calls the registry at REGISTRY_URL with its own token (INTERNAL_TOKEN_DELIVERER)
// and serves the gateway and the matcher, whose credentials must be configured (common/internal-auth.ts).
import { loadConfig } from "../common/config.ts";
import { ensureDatabase } from "../common/db.ts";
import { callerTokenOrExit, requireCallersOrExit } from "../common/internal-auth.ts";
import { log } from "../common/logger.ts";
import { networkTransport } from "../common/rpc.ts";
import { internalCa, serveOptions, serveService, stopOnSignals } from "../common/service.ts";
import { createDeliverer } from "./index.ts";

const config = loadConfig();
const token = callerTokenOrExit(config, "deliverer");
const ca = internalCa(config);
requireCallersOrExit(config, "deliverer", ["gateway", "matcher"]);
await ensureDatabase(config.databaseUrl);
const handle = await createDeliverer(config, { registry: networkTransport(config.registryUrl, { token, ca }) });
const served = await serveService(handle, config.delivererPort, config.delivererGrpcPort, serveOptions(config));
log.info("deliverer listening", { host: config.bindHost, port: config.delivererPort, grpcPort: config.delivererGrpcPort });

// Stop taking requests, then let attempts in flight finish (or hand their events back) before exiting.
stopOnSignals("deliverer", () => served.stop(), () => handle.close());
