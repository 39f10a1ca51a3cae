// `bun run registry`: the registry alone, as it runs in its own pod.
import { loadConfig } from "../common/config.ts";
import { ensureDatabase } from "../common/db.ts";
import { log } from "../common/logger.ts";
import { serveService, stopOnSignals } from "../common/service.ts";
import { createRegistry } from "./index.ts";

const config = loadConfig();
await ensureDatabase(config.databaseUrl);
const handle = await createRegistry(config);
const served = await serveService(handle, config.registryPort, config.registryGrpcPort);
log.info("registry listening", { port: config.registryPort, grpcPort: config.registryGrpcPort });

stopOnSignals("registry", () => served.stop(), () => handle.close());
