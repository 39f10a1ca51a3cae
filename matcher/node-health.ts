// Whether each chain's TRON node answers, for readiness, and what an operator reads when it does not: one line per
// chain per minute at most, naming the variable that points at the node, never a stack trace per retry.
import { NODE_URL_VARIABLES } from "../common/config.ts";
import { type ChainId } from "../common/contract/index.ts";
import type { Logger } from "../common/logger.ts";
import type { TronNodeError } from "../common/tron-node/client.ts";

export const NODE_REPORT_INTERVAL_MS = 60_000;

/** The node's address without credentials (a URL may carry user:password). */
function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === "/" ? "" : u.pathname}`;
  } catch {
    return "(not a URL)";
  }
}

export interface ChainNodeHealth {
  /** True once this chain's node has answered. */
  readonly answered: boolean;
  /** Called after every node request. */
  observe(ok: boolean): void;
  /** A stream step failed because the node did not answer. */
  failed(err: TronNodeError): void;
}

export class NodeHealth {
  private readonly answered = new Set<ChainId>();

  constructor(
    private readonly log: Logger,
    private readonly intervalMs = NODE_REPORT_INTERVAL_MS,
  ) {}

  /** True once any configured chain's node has answered. */
  anyAnswered(): boolean {
    return this.answered.size > 0;
  }

  forChain(chainId: ChainId, nodeUrl: string): ChainNodeHealth {
    const variable = NODE_URL_VARIABLES[chainId];
    const url = safeUrl(nodeUrl);
    let lastReport = -Infinity;
    let suppressed = 0;
    let down = false;
    const answered = this.answered;
    return {
      get answered() {
        return answered.has(chainId);
      },
      observe: (ok) => {
        if (!ok) return;
        this.answered.add(chainId);
        if (down) {
          down = false;
          this.log.info("TRON node answering again", { chain: chainId, url });
        }
      },
      failed: (err) => {
        down = true;
        const now = Date.now();
        if (now - lastReport < this.intervalMs) {
          suppressed++;
          return;
        }
        lastReport = now;
        this.log.warn(
          `TRON node for ${chainId} not answering at ${url}: set ${variable} to a reachable java-tron HTTP API, ` +
            `or leave ${chainId} out of MATCHER_CHAINS`,
          { chain: chainId, url, error: err.message, failuresSinceLastReport: suppressed },
        );
        suppressed = 0;
      },
    };
  }
}
