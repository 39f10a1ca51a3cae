// The simulated chain: recorded mainnet blocks, then generated blocks on top of them, a queue of transfers that
// tests ask for, and forks. Every block is stored in java-tron's hex form (visible=false) and rendered to either
// form on request; the recorded blocks render to their original bytes in the form they were recorded in.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { TronBlock, TronTransaction, TronTransactionInfo } from "../../common/tron-node/types.ts";
import { activitySpecToHex, activityTransaction, type ActivitySpec, type ActivityType, type BuiltActivity, type InfoExtra } from "./activity.ts";
import { USDT_HEX } from "./envelope.ts";
import { renderVisible, toHexForm } from "./forms.ts";
import {
  BlockGenerator,
  MAINNET_MIX,
  addressPool,
  assembleBlock,
  internalSpecs,
  transferTransaction,
  type TransferSpec,
  type TxMix,
} from "./generate.ts";
import { blockTxFromTronGrid, infoFromTronGrid, loadTestnetInfos, loadTronGridTransactions } from "./recorded.ts";
import { internalTransactions, synthesizeTransactionInfos } from "./txinfo.ts";
import { addressToBase58, addressToHex } from "./forms.ts";
import { OnDemandBacklog } from "./backlog.ts";
import { CanonicalBlocks } from "./canonical.ts";

export const FIXTURES_DIR = join(import.meta.dir, "../../fixtures/tron");

export interface StoredBlock {
  block: TronBlock;
  infos: TronTransactionInfo[];
  /** False only when every info of the block is recorded data. */
  synthesized: boolean;
  /** When the simulator made it available (ms). */
  availableAt: number;
  /** Original recorded text per form, served byte for byte. */
  recorded?: { visible?: string; hex?: string };
  rendered: Map<string, string>;
}

export interface ChainOptions {
  /** Transactions per generated block. */
  txPerBlock?: number;
  mix?: TxMix;
  poolSize?: number;
  seed?: number;
  /** Serve the recorded blocks and build on top of block 61132092 (default true). */
  recorded?: boolean;
  /** Without recorded blocks: the number of the first block. */
  startNumber?: number;
  /** Generated blocks before the head at start, timestamps spaced 3 s apart, ending now. */
  backlog?: number;
  /** How many blocks the solidified head trails the head (java-tron: about 19). */
  solidLag?: number;
  /** History to find: transfers to chosen addresses in the backlog's blocks (backfill tests and the demo). */
  history?: HistoryOptions;
  /** Make the backlog's blocks when asked, keeping `backlogCache` of them (backlog.ts), instead of all up front. */
  backlogOnDemand?: boolean;
  backlogCache?: number;
}

/**
 * Every `every`-th backlog block (default 10, the oldest first) carries one transfer to each of `to`, from a pool
 * address, alternating TRX and USDT (`amount` base units, default 1,000,000).
 */
export interface HistoryOptions {
  to: string[];
  every?: number;
  amount?: number;
}

/** One transfer the history placed. */
export interface HistoryTransfer {
  blockNumber: number;
  timestampMs: number;
  txId: string;
  to: string;
  type: "trx" | "trc20";
}

/** An activity queued for the next block: its transaction and, for a log (approval, blacklist), the log's index. */
export interface QueuedActivity {
  type: ActivityType;
  txId: string;
  /** The log's index in the transaction's info (0: the only log); -1 for a contract; absent for a failed call (no log). */
  logIndex?: number;
}

/** What a node serves: its head, its solidified head and its blocks (the simulated node, or one stuck on a dead branch). */
export interface ChainView {
  head(): StoredBlock;
  solid(): StoredBlock;
  byNumber(num: number): StoredBlock | undefined;
  byBlockId(id: string): StoredBlock | undefined;
}

/** Why a fork was refused (the server answers it as a 400). */
export class ForkRefused extends Error {}

function loadJson(name: string): { text: string; value: unknown } {
  const text = readFileSync(join(FIXTURES_DIR, name), "utf8");
  return { text, value: JSON.parse(text) };
}

export class SimChain {
  readonly pool: string[];
  readonly generator: BlockGenerator;
  txPerBlock: number;
  /** Serve only part of the newest block's infos for this long after it appears (models a lagging node). */
  infoLagMs = 0;
  /** Blocks between the head and the solidified head. */
  solidLag: number;
  /** False: the node has no solidity API (/walletsolidity/* answer 404), as some full nodes are deployed. */
  solidityApi = true;
  /** Added to the wall clock for new blocks and transactions: lets a test pass a transaction's expiration at once. */
  clockOffsetMs = 0;
  /** The transfers `history` placed in the backlog, oldest first. */
  readonly history: HistoryTransfer[] = [];
  private readonly canonical = new CanonicalBlocks<StoredBlock>();
  /** The backlog made on demand (all but its newest block), when asked for. */
  private onDemand: OnDemandBacklog<StoredBlock> | null = null;
  private readonly archive = new Map<number, StoredBlock>();
  private readonly byId = new Map<string, StoredBlock>();
  private readonly txIndex = new Map<string, StoredBlock>();
  private readonly recordedInfos = new Map<string, TronTransactionInfo>();
  /** Synthesized infos of placed recorded transactions (the TronGrid ones: their infos were never recorded). */
  private readonly placedInfos = new Map<string, TronTransactionInfo>();
  /**
   * What a transaction's synthesized info adds, by txID: the internal transactions asked for with a transfer spec,
   * an activity's logs and amounts (generated ones too: the generator fills the same map). Kept by txID, so a
   * fork's re-included transaction keeps them.
   */
  private readonly infoExtras = new Map<string, InfoExtra>();
  private pending: TronTransaction[] = [];
  /** The branch the last fork made with `keepReplaced` replaced, and the block it forked from. */
  private replaced: { ancestor: number; blocks: StoredBlock[] } | null = null;

  constructor(opts: ChainOptions = {}) {
    this.txPerBlock = opts.txPerBlock ?? 300;
    this.solidLag = opts.solidLag ?? 19;
    this.pool = addressPool(opts.poolSize ?? 2_000, opts.seed ?? 1);
    this.generator = new BlockGenerator({ pool: this.pool, mix: opts.mix ?? MAINNET_MIX, seed: (opts.seed ?? 1) + 7, infoExtras: this.infoExtras });
    if (opts.recorded ?? true) {
      this.loadRecorded();
    } else {
      const start = opts.startNumber ?? 70_000_000;
      const genesisParent = { number: start - 2, blockID: (start - 2).toString(16).padStart(16, "0") + "0".repeat(48) };
      this.append(this.generator.block(genesisParent, Date.now() - 3_000 * ((opts.backlog ?? 0) + 1), 0), false);
    }
    const backlog = opts.backlog ?? 0;
    const now = Date.now();
    let madeNow = backlog;
    if (opts.backlogOnDemand && backlog > 1) {
      // All but the newest block on demand; the newest is made here, so the head is always a block the chain holds.
      const b = new OnDemandBacklog({
        anchor: this.ref(this.head()),
        count: backlog - 1,
        lastTimestampMs: now - 3_000,
        txPerBlock: this.txPerBlock,
        pool: this.pool,
        mix: opts.mix ?? MAINNET_MIX,
        seed: opts.seed ?? 1,
        ...(opts.history ? { history: opts.history } : {}),
        ...(opts.backlogCache !== undefined ? { cacheBlocks: opts.backlogCache } : {}),
        wrap: (block, infos) => ({ block, infos, synthesized: true, availableAt: 0, rendered: new Map() }),
      });
      this.canonical.defer(b, b.last - b.first + 1);
      for (const h of b.history) this.history.push(h);
      this.onDemand = b;
      madeNow = 1;
    }
    for (let i = madeNow - 1; i >= 0; i--) {
      const placed = opts.history ? this.placeHistory(opts.history, backlog - 1 - i) : [];
      const stored = this.produce(now - i * 3_000);
      const h = stored.block.block_header.raw_data;
      for (const p of placed) this.history.push({ blockNumber: h.number, timestampMs: h.timestamp, ...p });
    }
  }

  /** Queues the history's transfers for backlog block `index` (0 = oldest), when it is one of its blocks. */
  private placeHistory(h: HistoryOptions, index: number): Omit<HistoryTransfer, "blockNumber" | "timestampMs">[] {
    const every = h.every ?? 10;
    if (index % every !== 0 || h.to.length === 0) return [];
    const type = (index / every) % 2 === 0 ? "trx" : "trc20";
    const from = addressToBase58(this.pool[index % this.pool.length]!);
    const ids = this.enqueue(h.to.map((to) => ({ type, from, to, amount: h.amount ?? 1_000_000 })));
    return ids.map((txId, i) => ({ txId, to: h.to[i]!, type }));
  }

  private loadRecorded(): void {
    const info = loadJson("mainnet-tx-661f1df8.gettransactioninfobyid.visible.json");
    const infoHex = toHexForm(info.value as TronTransactionInfo);
    this.recordedInfos.set(infoHex.id, infoHex);
    const older = loadJson("mainnet-block-60836289.getblockbynum.visible.json");
    const olderBlock = toHexForm(older.value as TronBlock);
    const olderStored = this.store(olderBlock, 0, { visible: older.text });
    this.archive.set(olderBlock.block_header.raw_data.number, olderStored);
    const newer = loadJson("mainnet-block-61132092.getblockbynum.json");
    const newerStored = this.store(newer.value as TronBlock, 0, { hex: newer.text });
    this.canonical.push(newerStored);
  }

  private store(block: TronBlock, availableAt: number, recorded?: StoredBlock["recorded"]): StoredBlock {
    const infos = synthesizeTransactionInfos(
      block,
      (id) => this.recordedInfos.get(id) ?? this.placedInfos.get(id),
      this.infoExtras,
    );
    const synthesized = infos.some((i) => !this.recordedInfos.has(i.id));
    const stored: StoredBlock = { block, infos, synthesized, availableAt, rendered: new Map() };
    if (recorded) stored.recorded = recorded;
    this.byId.set(block.blockID, stored);
    for (const tx of block.transactions ?? []) this.txIndex.set(tx.txID, stored);
    return stored;
  }

  private append(block: TronBlock, _check = true): StoredBlock {
    const stored = this.store(block, Date.now());
    this.canonical.push(stored);
    return stored;
  }

  head(): StoredBlock {
    return this.canonical.get(this.canonical.length - 1)!;
  }

  first(): StoredBlock {
    return this.canonical.get(0)!;
  }

  /** The solidified head: `solidLag` blocks below the head, never below the first block. */
  solid(): StoredBlock {
    return this.canonical.get(Math.max(0, this.canonical.length - 1 - this.solidLag))!;
  }

  /** The simulator's clock (ms): the wall clock plus the offset tests may add. */
  now(): number {
    return Date.now() + this.clockOffsetMs;
  }

  private ref(stored: StoredBlock) {
    return { number: stored.block.block_header.raw_data.number, blockID: stored.block.blockID };
  }

  /** Makes the next block: queued transfers first, then random transactions. */
  produce(timestamp = this.now()): StoredBlock {
    const parent = this.head();
    const extra = this.pending;
    this.pending = [];
    const block = this.generator.block(this.ref(parent), timestamp, this.txPerBlock, extra);
    return this.append(block);
  }

  /** Queues transfers for the next block; returns their transaction ids. */
  enqueue(specs: TransferSpec[]): string[] {
    const ids: string[] = [];
    for (const spec of specs) {
      const hexSpec: TransferSpec = {
        ...spec,
        from: addressToHex(spec.from),
        to: addressToHex(spec.to),
        ...(spec.contract ? { contract: addressToHex(spec.contract) } : {}),
        ...(spec.internal ? { internal: spec.internal.map((m) => ({ ...m, to: addressToHex(m.to) })) } : {}),
      };
      const tx = this.queueUnique(ids, (ref, at) => transferTransaction(hexSpec, ref, at, this.generator.rand));
      const moves = internalSpecs(hexSpec);
      if (moves.length > 0) this.infoExtras.set(tx.txID, { internal_transactions: internalTransactions(tx.txID, hexSpec.contract ?? USDT_HEX, moves) });
    }
    return ids;
  }

  /**
   * Queues activities for the next block (see activity.ts); returns, per spec, its txId and (for an approval or a
   * blacklist event) its log's index. A blacklist call without `issuer` is signed by the first pool address. Every
   * spec is checked before any is queued: a bad one (a TypeError) queues nothing.
   */
  enqueueActivities(specs: ActivitySpec[]): QueuedActivity[] {
    const hexSpecs = specs.map((s) => {
      const hex = activitySpecToHex(s);
      if (hex.type.startsWith("blacklist_") && !hex.issuer) hex.issuer = this.pool[0]!;
      // Built once here so a missing field throws before anything is queued.
      activityTransaction(hex, this.ref(this.head()), this.now(), this.generator.rand);
      return hex;
    });
    const ids: string[] = [];
    return hexSpecs.map((spec) => {
      let built: BuiltActivity | undefined;
      const tx = this.queueUnique(ids, (ref, at) => (built = activityTransaction(spec, ref, at, this.generator.rand)).tx);
      if (built!.extra) this.infoExtras.set(tx.txID, built!.extra);
      return { type: spec.type, txId: tx.txID, ...(built!.logIndex === undefined ? {} : { logIndex: built!.logIndex }) };
    });
  }

  /**
   * Queues the transaction `make` builds, referring to the head. Two equal ones queued together (same content and
   * time) would be one transaction to java-tron: each gets a raw_data timestamp 1 ms earlier than the last taken, so
   * every queued one has its own txID. Adds the txID to `ids`.
   */
  private queueUnique(ids: string[], make: (ref: { number: number; blockID: string }, at: number) => TronTransaction): TronTransaction {
    const ref = this.ref(this.head());
    let at = this.now();
    let tx = make(ref, at);
    while (ids.includes(tx.txID) || this.pending.some((p) => p.txID === tx.txID) || this.byTxId(tx.txID)) tx = make(ref, --at);
    this.pending.push(tx);
    ids.push(tx.txID);
    return tx;
  }

  /**
   * Queues recorded lifecycle transactions for the next block (see fixtures/tron/PROVENANCE.md):
   * - `failed-usdt`: the transactions of mainnet block 50568556 in the TronGrid capture (4 × REVERT, 1 ×
   *   OUT_OF_ENERGY and the SUCCESS of the same USDT transfer, then TRX transfers), with synthesized infos;
   * - `internal`: the real infos of testnet block 1,000,000 (internal TRX transfers), each beside a synthesized
   *   contract call carrying its txID.
   * Their infos are served with the number and timestamp of the block they land in. Returns the txIds.
   */
  place(fixture: "failed-usdt" | "internal"): string[] {
    const parent = this.head();
    const txs: TronTransaction[] = [];
    if (fixture === "failed-usdt") {
      for (const r of loadTronGridTransactions().filter((r) => r.blockNumber === 50568556)) {
        this.placedInfos.set(r.txID, infoFromTronGrid(r));
        txs.push(blockTxFromTronGrid(r));
      }
    } else {
      for (const info of loadTestnetInfos()) {
        this.recordedInfos.set(info.id, info);
        const caller = info.contract_address ?? USDT_HEX;
        const call = transferTransaction({ type: "call", from: this.pool[0]!, to: caller, amount: 0, contract: caller }, this.ref(parent), this.now(), this.generator.rand);
        txs.push({ ...call, txID: info.id });
      }
    }
    this.pending.push(...txs);
    return txs.map((t) => t.txID);
  }

  /**
   * Replaces the newest `depth` blocks with a new branch of `length` blocks (default depth) from the same parent.
   * `reinclude`: true (default) puts the old blocks' transactions back in the new branch, as on a real chain; false
   * drops them all; a list of txIds re-includes only those (the rest vanish, as a transaction that expired in a
   * node's pool does). A fork that would replace the solidified head or anything below it is refused: solidified
   * blocks are final on TRON. `at` stamps the new blocks from that time on, 3 s apart (default: the old blocks' times),
   * as when the replacing branch is produced later (past a midnight, say).
   */
  fork(
    depth: number,
    length = depth,
    reinclude: boolean | readonly string[] = true,
    at?: number,
    keepReplaced = false,
  ): { ancestor: number; removed: string[]; added: string[] } {
    if (!Number.isInteger(depth) || depth < 1 || depth >= this.canonical.length) {
      throw new ForkRefused(`fork depth must be 1..${this.canonical.length - 1}`);
    }
    if (!Number.isInteger(length) || length < 0) throw new ForkRefused("fork length must be a whole number ≥ 0");
    const solidIndex = Math.max(0, this.canonical.length - 1 - this.solidLag);
    if (this.canonical.length - depth <= solidIndex) {
      throw new ForkRefused(`a fork of depth ${depth} would replace solidified block ${this.ref(this.solid()).number}`);
    }
    const removed = this.canonical.truncate(this.canonical.length - depth);
    if (keepReplaced) this.replaced = { ancestor: this.ref(this.head()).number, blocks: removed };
    for (const r of removed) for (const tx of r.block.transactions ?? []) this.txIndex.delete(tx.txID);
    const keep = (tx: TronTransaction) => (typeof reinclude === "boolean" ? reinclude : reinclude.includes(tx.txID));
    const added: string[] = [];
    const now = this.now();
    for (let i = 0; i < length; i++) {
      const parent = this.head();
      const old = (removed[i]?.block.transactions ?? []).filter(keep);
      const ts = at !== undefined ? at + i * 3_000 : (removed[i]?.block.block_header.raw_data.timestamp ?? now);
      const fresh: TronTransaction[] = [];
      for (let j = 0; j < Math.min(this.txPerBlock, 20); j++) fresh.push(this.generator.randomTransaction(this.ref(parent), ts));
      const block = assembleBlock(this.ref(parent), ts, [...old, ...fresh], removed[0]?.block.block_header.raw_data.witness_address ?? this.pool[0]!, this.generator.rand);
      added.push(this.append(block).block.blockID);
    }
    return { ancestor: this.ref(this.head()).number - length, removed: removed.map((r) => r.block.blockID), added };
  }

  /**
   * A node that stayed on the branch the last `keepReplaced` fork replaced: the same blocks up to the common
   * ancestor, the replaced ones above it, and a solidified head no higher than the ancestor (solidified blocks are
   * final on every node). Null when no fork kept its branch.
   */
  replacedView(): ChainView | null {
    const r = this.replaced;
    if (!r) return null;
    const byNumber = (num: number) => (num <= r.ancestor ? this.byNumber(num) : r.blocks[num - r.ancestor - 1]);
    const head = () => r.blocks[r.blocks.length - 1] ?? this.byNumber(r.ancestor)!;
    return {
      head,
      solid: () => this.byNumber(Math.min(r.ancestor, head().block.block_header.raw_data.number - this.solidLag))!,
      byNumber,
      byBlockId: (id) => {
        const s = this.byId.get(id);
        return s && byNumber(s.block.block_header.raw_data.number) === s ? s : undefined;
      },
    };
  }

  byNumber(num: number): StoredBlock | undefined {
    const base = this.first().block.block_header.raw_data.number;
    return this.canonical.get(num - base) ?? this.archive.get(num);
  }

  byBlockId(id: string): StoredBlock | undefined {
    const s = this.byId.get(id) ?? this.onDemand?.byBlockId(id);
    if (!s) return undefined;
    // Orphaned blocks are no longer served once a fork replaced them.
    return this.byNumber(s.block.block_header.raw_data.number) === s ? s : undefined;
  }

  /** Whether block `num` is one the backlog makes on demand (tens of ms for a full block when not cached). */
  onDemandBlock(num: number): boolean {
    return this.onDemand !== null && num >= this.onDemand.first && num <= this.onDemand.last;
  }

  /** Whether the info of `txId` is recorded node output (else the simulator made it up). */
  isRecordedInfo(txId: string): boolean {
    return this.recordedInfos.has(txId);
  }

  byTxId(txId: string): StoredBlock | undefined {
    const s = this.txIndex.get(txId);
    if (s) return s;
    // A history transfer of the on-demand backlog, while its block is canonical (a fork may have replaced it).
    const d = this.onDemand?.byTxId(txId);
    return d && this.byNumber(d.block.block_header.raw_data.number) === d ? d : undefined;
  }

  /** Generated-block addresses in base58 would cost a conversion each; callers convert what they need. */
  poolHex(): string[] {
    return this.pool;
  }
}

/** A block rendered in one form, cached (blocks never change once made; a fork makes new ones). */
export function renderBlock(stored: StoredBlock, visible: boolean, detail = true): string {
  const key = `b${visible ? 1 : 0}${detail ? 1 : 0}`;
  let text = stored.rendered.get(key);
  if (text !== undefined) return text;
  if (detail && visible && stored.recorded?.visible) text = stored.recorded.visible;
  else if (detail && !visible && stored.recorded?.hex) text = stored.recorded.hex;
  else {
    const block = detail ? stored.block : { blockID: stored.block.blockID, block_header: stored.block.block_header };
    text = JSON.stringify(visible ? renderVisible(block) : block);
  }
  stored.rendered.set(key, text);
  return text;
}

export function renderInfos(stored: StoredBlock, visible: boolean, count = stored.infos.length): string {
  const key = `i${visible ? 1 : 0}`;
  if (count !== stored.infos.length) {
    const part = stored.infos.slice(0, count);
    return JSON.stringify(visible ? renderVisible(part) : part);
  }
  let text = stored.rendered.get(key);
  if (text === undefined) {
    text = JSON.stringify(visible ? renderVisible(stored.infos) : stored.infos);
    stored.rendered.set(key, text);
  }
  return text;
}
