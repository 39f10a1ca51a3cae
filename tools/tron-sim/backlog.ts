// The backlog generated on demand (`--backlog-on-demand`): a block is a function of its number and the seed, made
// when asked and kept among the last few hundred asked for, so a backlog of 100,000 blocks × 300 transactions costs
// the memory of that cache, not of the chain (made up front and rendered, 1,000 such blocks took 5.5 GB). Each block has its own random stream (seeded
// by the seed and its number) and a blockID that does not depend on its content (the number, then the tail of a
// hash of the seed and the number), so block n can be made, with its parentHash, without making the blocks before it.
// The history's transfers are made the same way (their own stream per block): listed up front, indexed by txId.
import type { TronBlock, TronTransaction, TronTransactionInfo } from "../../common/tron-node/types.ts";
import { addressToHex } from "./forms.ts";
import { BlockGenerator, mulberry32, transferTransaction, type TxMix } from "./generate.ts";
import { sha256Hex } from "./envelope.ts";
import { synthesizeTransactionInfos } from "./txinfo.ts";

/** A transfer the history placed (chain.ts HistoryTransfer). */
export interface PlacedTransfer {
  blockNumber: number;
  timestampMs: number;
  txId: string;
  to: string;
  type: "trx" | "trc20";
}

export interface OnDemandBacklogOptions<B> {
  /** The block just before the backlog (the recorded block, or the generated first block). */
  anchor: { number: number; blockID: string };
  /** Blocks in the backlog: numbers anchor + 1 .. anchor + count. */
  count: number;
  /** The newest backlog block's timestamp; each older one is 3 s earlier. */
  lastTimestampMs: number;
  txPerBlock: number;
  pool: string[];
  mix: TxMix;
  seed: number;
  /** As chain.ts HistoryOptions. */
  history?: { to: string[]; every?: number; amount?: number };
  /** What the chain keeps of a block (chain.ts StoredBlock). */
  wrap: (block: TronBlock, infos: TronTransactionInfo[]) => B;
  /** Blocks kept made (with their rendered JSON); default 256, two scanner runs of 100 and the live streams' reads. */
  cacheBlocks?: number;
}

const BLOCK_MS = 3_000;

/** A 32-bit seed from the chain's seed, a block number and a purpose. */
function seedOf(seed: number, number: number, purpose: string): number {
  return Number.parseInt(sha256Hex(`tron-sim ${purpose} ${seed} ${number}`).slice(0, 8), 16);
}

export class OnDemandBacklog<B> {
  readonly first: number;
  readonly last: number;
  /** The history's transfers, oldest first. */
  readonly history: PlacedTransfer[] = [];
  private readonly historyBlocks = new Map<string, number>();
  private readonly cache = new Map<number, B>();
  private readonly cacheBlocks: number;
  /** Blocks made so far (a block made again after leaving the cache counts again). */
  made = 0;

  constructor(private readonly opts: OnDemandBacklogOptions<B>) {
    this.first = opts.anchor.number + 1;
    this.last = opts.anchor.number + opts.count;
    this.cacheBlocks = Math.max(1, opts.cacheBlocks ?? 256);
    if (opts.history) {
      for (let n = this.first; n <= this.last; n++) {
        for (const { tx, to, type } of this.historyOf(n)) {
          this.history.push({ blockNumber: n, timestampMs: this.timestamp(n), txId: tx.txID, to, type });
          this.historyBlocks.set(tx.txID, n);
        }
      }
    }
  }

  /** The block at `index` of the backlog (0 = the oldest): from the cache, or made now. */
  get(index: number): B {
    return this.byNumber(this.first + index)!;
  }

  byNumber(n: number): B | undefined {
    if (!Number.isInteger(n) || n < this.first || n > this.last) return undefined;
    let stored = this.cache.get(n);
    if (stored) {
      // Most recently used last: the first key is the one to evict.
      this.cache.delete(n);
    } else {
      stored = this.make(n);
      if (this.cache.size >= this.cacheBlocks) this.cache.delete(this.cache.keys().next().value!);
    }
    this.cache.set(n, stored);
    return stored;
  }

  byBlockId(id: string): B | undefined {
    if (!/^[0-9a-f]{64}$/.test(id)) return undefined;
    const n = Number.parseInt(id.slice(0, 16), 16);
    return n >= this.first && n <= this.last && this.blockId(n) === id ? this.byNumber(n) : undefined;
  }

  /** The block holding a history transfer (other transactions of the backlog are not indexed: that is its memory). */
  byTxId(txId: string): B | undefined {
    const n = this.historyBlocks.get(txId);
    return n === undefined ? undefined : this.byNumber(n);
  }

  blockId(n: number): string {
    if (n === this.opts.anchor.number) return this.opts.anchor.blockID;
    return n.toString(16).padStart(16, "0") + sha256Hex(`tron-sim block ${this.opts.seed} ${n}`).slice(16);
  }

  timestamp(n: number): number {
    return this.opts.lastTimestampMs - (this.last - n) * BLOCK_MS;
  }

  private parent(n: number) {
    return { number: n - 1, blockID: this.blockId(n - 1) };
  }

  /** As SimChain's history: every `every`-th block (oldest first) pays each address, alternating TRX and USDT. */
  private historyOf(n: number): { tx: TronTransaction; to: string; type: "trx" | "trc20" }[] {
    const h = this.opts.history;
    const index = n - this.first;
    const every = h?.every ?? 10;
    if (!h || index % every !== 0 || h.to.length === 0) return [];
    const type = (index / every) % 2 === 0 ? "trx" : "trc20";
    const pool = this.opts.pool;
    const from = pool[index % pool.length]!;
    const rand = mulberry32(seedOf(this.opts.seed, n, "history"));
    const out: { tx: TronTransaction; to: string; type: "trx" | "trc20" }[] = [];
    for (const to of h.to) {
      // Equal transfers in one block would be one transaction: each takes a timestamp 1 ms earlier until unique.
      let at = this.timestamp(n);
      const spec = { type, from, to: addressToHex(to), amount: h.amount ?? 1_000_000 } as const;
      let tx = transferTransaction(spec, this.parent(n), at, rand);
      while (out.some((o) => o.tx.txID === tx.txID)) tx = transferTransaction(spec, this.parent(n), --at, rand);
      out.push({ tx, to, type });
    }
    return out;
  }

  private make(n: number): B {
    this.made++;
    const generator = new BlockGenerator({ pool: this.opts.pool, mix: this.opts.mix, seed: seedOf(this.opts.seed, n, "block") });
    const extra = this.historyOf(n).map((h) => h.tx);
    const block = generator.block(this.parent(n), this.timestamp(n), this.opts.txPerBlock, extra);
    block.blockID = this.blockId(n);
    return this.opts.wrap(block, synthesizeTransactionInfos(block, () => undefined));
  }
}
