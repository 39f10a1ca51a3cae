// Mainnet-like blocks: a configurable number of transactions per block, a mix of TRX transfers, USDT transfers
// (TriggerSmartContract with `transfer(address,uint256)` calldata, a few `transferFrom`), TRC-10 transfers and
// non-transfer contracts, between addresses drawn from a fixed pool. Transactions are real protobuf-encoded
// (raw_data_hex through tronweb, txID = sha256 of it); blockIDs follow java-tron's layout (8-byte number, then the
// tail of a header hash) and each block's parentHash is its parent's blockID.
import type { TronBlock, TronTransaction } from "../../matcher/tron-types.ts";
import { USDT_HEX, baseRaw, finishTransaction, randomHex, sha256Hex, type RefBlock } from "./envelope.ts";

export { USDT_HEX } from "./envelope.ts";
const TRC10_IDS = ["1002000", "1005023", "1004937", "1000226"];

export interface TxMix {
  trx: number;
  usdt: number;
  trc10: number;
  /** Non-transfer contracts (resource delegation), so the decoder sees what mainnet has. */
  other: number;
}

export const MAINNET_MIX: TxMix = { trx: 0.4, usdt: 0.45, trc10: 0.04, other: 0.11 };

/** A TRX or TRC-10 move a contract makes during a call (an `internal_transactions` entry of its info). */
export interface InternalSpec {
  to: string;
  /** Base units; 0 makes java-tron's empty `callValueInfo: [{}]` (a plain call). */
  amount: string | number;
  /** TRC-10 token id; absent for TRX. */
  tokenId?: string;
  /** Rolled back (java-tron's `rejected: true`): moved nothing. */
  rejected?: boolean;
}

/**
 * A transaction a test or the demo asks for; addresses in either form.
 * - `trx`, `trc10`: a TransferContract / TransferAssetContract.
 * - `trc20`: a `transfer(to, amount)` call of `contract` (default mainnet USDT).
 * - `call`: a call of `contract` by `from` whose info lists `internal` (the contract paying out); `to`/`amount` unused.
 * - `internal`: shorthand for a `call` of `contract` (default: `from`'s own contract call to USDT) whose
 *   `internal_transactions` are, as java-tron records such calls, a zero-value call of the contract to itself, then
 *   the move of `amount` (TRX, or TRC-10 with `tokenId`) from the contract to `to` (internalIndex 1), then the same
 *   move rolled back (`rejected: true`).
 */
export interface TransferSpec {
  type: "trx" | "trc10" | "trc20" | "call" | "internal";
  from: string;
  to: string;
  /** Base units, decimal string or integer. */
  amount: string | number;
  /** TRC-10 token id (default 1002000 for `trc10`; for `internal`, absent means TRX). */
  tokenId?: string;
  /** The called contract (default mainnet USDT). */
  contract?: string;
  /** java-tron's contractRet: "SUCCESS" (default), "REVERT", "OUT_OF_ENERGY", … */
  result?: string;
  /** The memo (raw_data.data) as UTF-8 text. */
  memo?: string;
  /** The memo as raw bytes (hex), for one that is not UTF-8. */
  memoHex?: string;
  /** TRX (sun) sent with a contract call (`call_value`). */
  callValue?: number;
  /** `call`: the info's internal transactions, in order. */
  internal?: InternalSpec[];
}

/** The internal transactions a spec's call makes (hex addresses), or none. */
export function internalSpecs(spec: TransferSpec): InternalSpec[] {
  if (spec.type === "call") return spec.internal ?? [];
  if (spec.type !== "internal") return [];
  const contract = spec.contract ?? USDT_HEX;
  const move = { to: spec.to, amount: spec.amount, ...(spec.tokenId ? { tokenId: spec.tokenId } : {}) };
  return [{ to: contract, amount: 0 }, move, { ...move, rejected: true }];
}

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A pool of hex addresses ("41…") drawn from a seed, so runs and tests can watch addresses the blocks will use. */
export function addressPool(size: number, seed: number): string[] {
  const rand = mulberry32(seed);
  const out: string[] = [];
  for (let i = 0; i < size; i++) out.push(`41${randomHex(rand, 20)}`);
  return out;
}

function word(hex: string): string {
  return hex.padStart(64, "0");
}

function memoHexOf(spec: TransferSpec): string | undefined {
  if (spec.memoHex) return spec.memoHex;
  return spec.memo ? Buffer.from(spec.memo, "utf8").toString("hex") : undefined;
}

/** One transaction for an explicit transfer (hex-form addresses). */
export function transferTransaction(spec: TransferSpec, ref: RefBlock, timestamp: number, rand: () => number): TronTransaction {
  const result = spec.result ?? "SUCCESS";
  const amount = BigInt(spec.amount);
  const memoHex = memoHexOf(spec);
  if (spec.type === "trx" || spec.type === "trc10") {
    const value: Record<string, unknown> = { amount: Number(amount), owner_address: spec.from, to_address: spec.to };
    if (spec.type === "trc10") value.asset_name = Buffer.from(spec.tokenId ?? "1002000", "utf8").toString("hex");
    const type = spec.type === "trx" ? "TransferContract" : "TransferAssetContract";
    return finishTransaction(
      {
        contract: [{ parameter: { value, type_url: `type.googleapis.com/protocol.${type}` }, type }],
        ...baseRaw(ref, timestamp, memoHex),
      },
      result,
      rand,
    );
  }
  // A payout call (`call`, `internal`) carries a made-up selector; `trc20` the real `transfer(address,uint256)`.
  const data = spec.type === "trc20" ? `a9059cbb${word(spec.to.slice(2))}${word(amount.toString(16))}` : "3ccfd60b";
  const value: Record<string, unknown> = { data, owner_address: spec.from, contract_address: spec.contract ?? USDT_HEX };
  if (spec.callValue) value.call_value = spec.callValue;
  return finishTransaction(
    {
      contract: [
        {
          parameter: { value, type_url: "type.googleapis.com/protocol.TriggerSmartContract" },
          type: "TriggerSmartContract",
        },
      ],
      ...baseRaw(ref, timestamp, memoHex),
      fee_limit: 100_000_000,
    },
    result,
    rand,
  );
}

export interface GeneratorOptions {
  pool: string[];
  mix: TxMix;
  seed: number;
  witnesses?: number;
}

export class BlockGenerator {
  readonly rand: () => number;
  private readonly witnesses: string[];

  constructor(private readonly opts: GeneratorOptions) {
    this.rand = mulberry32(opts.seed);
    this.witnesses = addressPool(opts.witnesses ?? 27, opts.seed ^ 0x5eed);
  }

  private pick(): string {
    return this.opts.pool[Math.floor(this.rand() * this.opts.pool.length)]!;
  }

  private pair(): [string, string] {
    const from = this.pick();
    let to = this.pick();
    while (to === from && this.opts.pool.length > 1) to = this.pick();
    return [from, to];
  }

  /** A random mainnet-like transaction. */
  randomTransaction(ref: RefBlock, timestamp: number): TronTransaction {
    const { trx, usdt, trc10 } = this.opts.mix;
    const total = trx + usdt + trc10 + this.opts.mix.other;
    const r = this.rand() * total;
    const [from, to] = this.pair();
    if (r < trx) {
      const amount = Math.floor(this.rand() * 5_000) * 1_000_000 + Math.floor(this.rand() * 1_000_000) + 1;
      return transferTransaction({ type: "trx", from, to, amount }, ref, timestamp, this.rand);
    }
    if (r < trx + usdt) {
      const amount = BigInt(Math.floor(this.rand() * 20_000_000_000) + 1);
      if (this.rand() < 0.01) {
        // transferFrom(from, to, amount) sent by a third party (an exchange sweeper, a payment contract).
        const spender = this.pick();
        const data = `23b872dd${word(from.slice(2))}${word(to.slice(2))}${word(amount.toString(16))}`;
        return finishTransaction(
          {
            contract: [
              {
                parameter: {
                  value: { data, owner_address: spender, contract_address: USDT_HEX },
                  type_url: "type.googleapis.com/protocol.TriggerSmartContract",
                },
                type: "TriggerSmartContract",
              },
            ],
            ...baseRaw(ref, timestamp),
            fee_limit: 100_000_000,
          },
          "SUCCESS",
          this.rand,
        );
      }
      return transferTransaction({ type: "trc20", from, to, amount: amount.toString() }, ref, timestamp, this.rand);
    }
    if (r < trx + usdt + trc10) {
      const tokenId = TRC10_IDS[Math.floor(this.rand() * TRC10_IDS.length)]!;
      const amount = Math.floor(this.rand() * 1_000_000_000) + 1;
      return transferTransaction({ type: "trc10", from, to, amount, tokenId }, ref, timestamp, this.rand);
    }
    const type = this.rand() < 0.5 ? "DelegateResourceContract" : "UnDelegateResourceContract";
    return finishTransaction(
      {
        contract: [
          {
            parameter: {
              value: { resource: "ENERGY", balance: Math.floor(this.rand() * 1e12), receiver_address: to, owner_address: from },
              type_url: `type.googleapis.com/protocol.${type}`,
            },
            type,
          },
        ],
        ...baseRaw(ref, timestamp),
      },
      "SUCCESS",
      this.rand,
    );
  }

  /** A block on top of `parent` holding `extra` first, then `count` random transactions. */
  block(parent: RefBlock, timestamp: number, count: number, extra: TronTransaction[] = []): TronBlock {
    const txs = [...extra];
    for (let i = 0; i < count; i++) txs.push(this.randomTransaction(parent, timestamp));
    return assembleBlock(parent, timestamp, txs, this.witnesses[Math.floor(this.rand() * this.witnesses.length)]!, this.rand);
  }
}

/** Header, txTrieRoot and blockID for the given transactions; `parent` supplies number and parentHash. */
export function assembleBlock(
  parent: RefBlock,
  timestamp: number,
  txs: TronTransaction[],
  witness: string,
  rand: () => number,
): TronBlock {
  const number = parent.number + 1;
  const raw = {
    number,
    // A hash over the transaction ids in order: not java-tron's Merkle tree, but it changes when they change.
    txTrieRoot: sha256Hex(txs.map((t) => t.txID).join("")),
    witness_address: witness,
    parentHash: parent.blockID,
    version: 31,
    timestamp,
  };
  const headerHash = sha256Hex(JSON.stringify(raw) + randomHex(rand, 8));
  const blockID = number.toString(16).padStart(16, "0") + headerHash.slice(16);
  const block: TronBlock = {
    blockID,
    block_header: { raw_data: raw, witness_signature: randomHex(rand, 65) },
  };
  if (txs.length > 0) block.transactions = txs;
  return block;
}
