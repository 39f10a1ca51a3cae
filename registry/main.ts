// `bun run registry`: the registry alone, as it runs in its own pod.
import { loadConfig } from "../common/config.ts";
import { ensureDatabase } from "../common/db.ts";
import { log } from "../common/logger.ts";
import { serveService } from "../common/service.ts";
import { createRegistry } from "./index.ts";

const config = loadConfig();
await ensureDatabase(config.databaseUrl);
const handle = await createRegistry(config);
const served = await serveService(handle, config.registryPort, config.registryGrpcPort);
log.info("registry listening", { port: config.registryPort, grpcPort: config.registryGrpcPort });

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  log.info("registry stopping", { signal });
  await served.stop();
  await handle.close();
  process.exit(0);
}
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
