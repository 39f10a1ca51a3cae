// The matcher as its own process (`bun matcher/main.ts`) against a matcher bed whose deliverer is served on a port:
// the crash tests SIGKILL it and start it again. stop() kills a matcher still running and ends the bed.
import type { Subprocess } from "bun";
import { join } from "node:path";
import { NODE_URL_VARIABLES } from "../../common/config.ts";
import { type ChainId } from "../../common/contract/index.ts";
import { serveService, type ServedService } from "../../common/service.ts";
import { openMatcherDatabase, type MatcherDb } from "../../matcher/store.ts";
import { startMatcherBed, type MatcherBed, type MatcherBedOptions } from "./matcher-bed.ts";

const ROOT = join(import.meta.dir, "../..");

export interface MatcherProcessBed {
  t: MatcherBed;
  /** The matcher's own tables (checkpoints, leases), read beside the process. */
  db: MatcherDb;
  /** Starts a matcher process for `chain`; the previous one must have exited. */
  spawn(): Subprocess;
  stop(): Promise<void>;
}

export async function startMatcherProcessBed(chain: ChainId, opts: Omit<MatcherBedOptions, "chains" | "matcher">): Promise<MatcherProcessBed> {
  const t = await startMatcherBed({ ...opts, chains: [chain], matcher: false });
  let served: ServedService | undefined;
  let db: MatcherDb | undefined;
  let proc: Subprocess | undefined;
  const stop = async () => {
    if (proc && proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
    await served?.stop();
    await db?.$client.close();
    await t.stop();
  };
  try {
    served = await serveService(t.bed.deliverer!, 0);
    db = await openMatcherDatabase(t.bed.env.DATABASE_URL!);
  } catch (err) {
    await stop();
    throw err;
  }
  const deliverer = served;
  return {
    t,
    db,
    spawn() {
      proc = Bun.spawn([join(ROOT, "node_modules/.bin/bun"), join(ROOT, "matcher/main.ts")], {
        cwd: ROOT,
        env: {
          ...process.env,
          ...t.bed.env,
          DELIVERER_URL: `http://127.0.0.1:${deliverer.http.port}`,
          [NODE_URL_VARIABLES[chain]]: t.sims[chain]!.url,
          MATCHER_CHAINS: chain,
          MATCHER_PORT: "0",
          MATCHER_POLL_MS: "50",
          LOG_LEVEL: "error",
        },
        stdout: "ignore",
        stderr: "inherit",
      });
      return proc;
    },
    stop,
  };
}
