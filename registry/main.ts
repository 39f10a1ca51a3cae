// `bun run registry`: the registry alone, as it runs in its own pod. Every RPC requires a caller's credential and
// its allow-list: the gateway's and the deliverer's must be configured (common/internal-auth.ts), the operator's may be.
import { loadConfig } from "../common/config.ts";
import { ensureDatabase } from "../common/db.ts";
import { requireCallersOrExit } from "../common/internal-auth.ts";
import { log } from "../common/logger.ts";
import { serveOptions, serveService, stopOnSignals } from "../common/service.ts";
import { createRegistry } from "./index.ts";

const config = loadConfig();
requireCallersOrExit(config, "registry", ["gateway", "deliverer"]);
await ensureDatabase(config.databaseUrl);
const handle = await createRegistry(config);
const served = await serveService(handle, config.registryPort, config.registryGrpcPort, serveOptions(config));
log.info("registry listening", { host: config.bindHost, port: config.registryPort, grpcPort: config.registryGrpcPort });

stopOnSignals("registry", () => served.stop(), () => handle.close());
