// `bun run deliverer`: the deliverer alone, as it runs in its own pod (Connect + health/metrics on DELIVERER_PORT,
// gRPC on DELIVERER_GRPC_PORT). It calls the registry at REGISTRY_URL.
import { loadConfig } from "../common/config.ts";
import { ensureDatabase } from "../common/db.ts";
import { log } from "../common/logger.ts";
import { networkTransport } from "../common/rpc.ts";
import { serveService } from "../common/service.ts";
import { createDeliverer } from "./index.ts";

const config = loadConfig();
await ensureDatabase(config.databaseUrl);
const handle = await createDeliverer(config, { registry: networkTransport(config.registryUrl) });
const served = await serveService(handle, config.delivererPort, config.delivererGrpcPort);
log.info("deliverer listening", { port: config.delivererPort, grpcPort: config.delivererGrpcPort });

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  log.info("deliverer stopping", { signal });
  // Stop taking requests, then let attempts in flight finish (or hand their events back) before exiting.
  await served.stop();
  await handle.close();
  process.exit(0);
}
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
