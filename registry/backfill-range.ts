// What a backfill's range is resolved against when the job is created: the chain's solidified head (the node's
// /walletsolidity head; the head minus MATCHER_CONFIRMATIONS, or minus 19 without a solidity API, as the matcher
// counts finality) and the blocks at given times. Asked of the same java-tron node the matcher reads.
import type { Config } from "../common/config.ts";
import type { ChainId } from "../common/contract/index.ts";
import { lacksSolidityApi, TronClient } from "../common/tron-node/client.ts";
import type { TronBlock } from "../common/tron-node/types.ts";

/** The matcher's finality without a solidity API (matcher/solid-stream.ts DEFAULT_CONFIRMATIONS). */
const DEFAULT_CONFIRMATIONS = 19;
/** TRON's block interval: block n+k is at least k × 3 s after block n. */
const SLOT_MS = 3_000;

export interface BlockPoint {
  number: number;
  timestampMs: number;
}

export interface ChainView {
  solidifiedHead(chainId: ChainId): Promise<BlockPoint>;
  /** The first block at or after `ms`, at most `head.number + 1` (no block yet). */
  firstAtOrAfter(chainId: ChainId, ms: number, head: BlockPoint): Promise<number>;
}

function point(b: TronBlock): BlockPoint {
  return { number: b.block_header.raw_data.number, timestampMs: b.block_header.raw_data.timestamp };
}

export class NodeChainView implements ChainView {
  private readonly clients = new Map<ChainId, TronClient>();

  constructor(
    private readonly config: Pick<Config, "tronNodeUrls" | "trongridApiKey" | "matcherConfirmations">,
    private readonly nodeUrls: Partial<Record<ChainId, string>> = {},
  ) {}

  private client(chainId: ChainId): TronClient {
    let c = this.clients.get(chainId);
    if (!c) {
      const baseUrl = this.nodeUrls[chainId] ?? this.config.tronNodeUrls[chainId];
      // Few, short attempts: a request waits on this answer.
      c = new TronClient({ baseUrl, attempts: 2, timeoutMs: 2_000, ...(this.config.trongridApiKey ? { apiKey: this.config.trongridApiKey } : {}) });
      this.clients.set(chainId, c);
    }
    return c;
  }

  async solidifiedHead(chainId: ChainId): Promise<BlockPoint> {
    const client = this.client(chainId);
    const counted = this.config.matcherConfirmations;
    if (counted === undefined) {
      try {
        return point(await client.getSolidifiedNowBlock());
      } catch (err) {
        if (!lacksSolidityApi(err)) throw err;
      }
    }
    const head = point(await client.getNowBlock());
    const n = head.number - (counted ?? DEFAULT_CONFIRMATIONS);
    const block = await client.getBlockHeader(n);
    if (!block) throw new Error(`the node lacks block ${n}`);
    return point(block);
  }

  /**
   * Blocks are at least 3 s apart, so the block `ceil((head − ms) / 3 s)` below the head is at or before `ms`: gallop
   * up from there (missed slots are rare, so a step or two) and bisect the last step.
   */
  async firstAtOrAfter(chainId: ChainId, ms: number, head: BlockPoint): Promise<number> {
    if (ms > head.timestampMs) return head.number + 1;
    const client = this.client(chainId);
    const ts = async (n: number) => (await client.getBlockHeader(n))?.block_header.raw_data.timestamp ?? -Infinity;
    let lo = Math.max(0, head.number - Math.ceil((head.timestampMs - ms) / SLOT_MS));
    if ((await ts(lo)) >= ms) return lo;
    // Invariant: ts(lo) < ms <= ts(hi).
    let hi = head.number;
    for (let step = 1; lo + step < hi; step *= 2) {
      if ((await ts(lo + step)) >= ms) {
        hi = lo + step;
        break;
      }
      lo += step;
    }
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if ((await ts(mid)) >= ms) hi = mid;
      else lo = mid;
    }
    return hi;
  }
}
