// `bun run registry`: the registry alone, as it runs in its own pod. Every RPC requires INTERNAL_TOKEN.
import { loadConfig } from "../common/config.ts";
import { ensureDatabase } from "../common/db.ts";
import { internalTokenOrExit } from "../common/internal-auth.ts";
import { log } from "../common/logger.ts";
import { serveOptions, serveService, stopOnSignals } from "../common/service.ts";
import { createRegistry } from "./index.ts";

const config = loadConfig();
internalTokenOrExit(config, "registry");
await ensureDatabase(config.databaseUrl);
const handle = await createRegistry(config);
const served = await serveService(handle, config.registryPort, config.registryGrpcPort, serveOptions(config));
log.info("registry listening", { host: config.bindHost, port: config.registryPort, grpcPort: config.registryGrpcPort });

stopOnSignals("registry", () => served.stop(), () => handle.close());
