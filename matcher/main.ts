// `bun run matcher`: the matcher alone, as it runs in its own pod (health and metrics on MATCHER_PORT; it serves no
// RPCs and calls the deliverer at DELIVERER_URL with its own token, INTERNAL_TOKEN_MATCHER).
import { loadConfig } from "../common/config.ts";
import { ensureDatabase } from "../common/db.ts";
import { callerTokenOrExit } from "../common/internal-auth.ts";
import { log } from "../common/logger.ts";
import { networkTransport } from "../common/rpc.ts";
import { internalCa, serveOptions, serveService, stopOnSignals } from "../common/service.ts";
import { createMatcher } from "./index.ts";

const config = loadConfig();
const token = callerTokenOrExit(config, "matcher");
const ca = internalCa(config);
await ensureDatabase(config.databaseUrl);
const handle = await createMatcher(config, { deliverer: networkTransport(config.delivererUrl, { token, ca }) });
const served = await serveService(handle, config.matcherPort, undefined, serveOptions(config));
log.info("matcher listening", { host: config.bindHost, port: config.matcherPort, chains: config.matcherChains });

stopOnSignals("matcher", () => served.stop(), () => handle.close());
