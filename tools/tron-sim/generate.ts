// Mainnet-like blocks: a configurable number of transactions per block, a mix of TRX transfers, USDT calls
// (TriggerSmartContract with `transfer(address,uint256)` calldata, a few `transferFrom` and `approve`), TRC-10
// transfers and non-transfer contracts (Stake 2.0 resource moves, votes, permission updates, account creation),
// between addresses drawn from a fixed pool. Transactions are real protobuf-encoded (raw_data_hex through tronweb,
// txID = sha256 of it); blockIDs follow java-tron's layout (8-byte number, then the tail of a header hash) and each
// block's parentHash is its parent's blockID.
import type { TronBlock, TronTransaction } from "../../common/tron-node/types.ts";
import { accountCreateTransaction, activityTransaction, type ActivitySpec, type InfoExtra, type ResourceCode } from "./activity.ts";
import { USDT_HEX, baseRaw, finishTransaction, randomHex, sha256Hex, type RefBlock } from "./envelope.ts";

export { USDT_HEX } from "./envelope.ts";
const TRC10_IDS = ["1002000", "1005023", "1004937", "1000226"];

/** The non-transfer contracts of the generated mix. */
export type OtherContract = "delegate" | "undelegate" | "freeze" | "account_create" | "unfreeze" | "withdraw_unfrozen" | "vote" | "withdraw_rewards" | "cancel_unfreeze" | "permission";

export interface TxMix {
  trx: number;
  /** USDT calls: transfer, transferFrom (1 % of them) and approve (`approvals` of them). */
  usdt: number;
  trc10: number;
  /** Non-transfer contracts, split by `others`, so the decoder sees what mainnet has. */
  other: number;
  /** The share of the USDT calls that are approve(spender, amount). */
  approvals: number;
  /** Relative weights of the non-transfer contracts. */
  others: Partial<Record<OtherContract, number>>;
}

/**
 * The two recorded mainnet blocks together (451 transactions): 153 TRX transfers (34 %), 194 contract calls (43 %,
 * all TRC-20 transfers), 34 TRC-10 (7.5 %), and 70 other contracts (15.5 %): 40 UnDelegateResource, 26
 * DelegateResource, 2 FreezeBalanceV2, 2 AccountCreate. The rarer contracts (unfreeze, withdrawals, votes, cancel,
 * permission updates: none in those blocks) get a few per thousand of `other`, so a few hundred 300-transaction blocks
 * carry each; approve() is 2 % of the calls (a few per block).
 */
export const MAINNET_MIX: TxMix = {
  trx: 0.34,
  usdt: 0.43,
  trc10: 0.075,
  other: 0.155,
  approvals: 0.02,
  others: {
    undelegate: 560,
    delegate: 360,
    freeze: 30,
    account_create: 30,
    unfreeze: 5,
    withdraw_unfrozen: 4,
    vote: 4,
    withdraw_rewards: 4,
    cancel_unfreeze: 2,
    permission: 1,
  },
};

/** Transfers only (TRX, USDT transfer/transferFrom, TRC-10): no activity at all, the matcher's baseline. */
export const TRANSFERS_MIX: TxMix = { trx: 0.4, usdt: 0.51, trc10: 0.09, other: 0, approvals: 0, others: {} };

/** The mixes `--mix` names. */
export const MIXES = { mainnet: MAINNET_MIX, transfers: TRANSFERS_MIX } as const;

/** `mix` with the USDT share set to `usdt` (0..1), the other shares scaled to fill the remainder. */
export function mixWithUsdt(mix: TxMix, usdt: number): TxMix {
  const rest = mix.trx + mix.trc10 + mix.other;
  const f = (1 - usdt) / rest;
  return { ...mix, usdt, trx: mix.trx * f, trc10: mix.trc10 * f, other: mix.other * f };
}

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
  /** Where generated activity leaves what its info adds (withdrawn amounts, logs), by txID. */
  infoExtras?: Map<string, InfoExtra>;
}

const MAX_UINT256 = (1n << 256n) - 1n;
const RESOURCES: ResourceCode[] = ["ENERGY", "ENERGY", "ENERGY", "ENERGY", "BANDWIDTH"];

export class BlockGenerator {
  readonly rand: () => number;
  readonly infoExtras: Map<string, InfoExtra>;
  private readonly witnesses: string[];
  private readonly others: [OtherContract, number][];
  private readonly othersTotal: number;

  constructor(private readonly opts: GeneratorOptions) {
    this.rand = mulberry32(opts.seed);
    this.witnesses = addressPool(opts.witnesses ?? 27, opts.seed ^ 0x5eed);
    this.infoExtras = opts.infoExtras ?? new Map();
    this.others = Object.entries(opts.mix.others).filter(([, w]) => w > 0) as [OtherContract, number][];
    this.othersTotal = this.others.reduce((s, [, w]) => s + w, 0);
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

  /** Whole TRX in sun, 1..max TRX, as staking amounts mostly are. */
  private trx(max: number): number {
    return (Math.floor(this.rand() * max) + 1) * 1_000_000;
  }

  /** A random mainnet-like transaction. */
  randomTransaction(ref: RefBlock, timestamp: number): TronTransaction {
    const { trx, usdt, trc10, other } = this.opts.mix;
    const r = this.rand() * (trx + usdt + trc10 + (this.othersTotal > 0 ? other : 0));
    const [from, to] = this.pair();
    if (r < trx) {
      const amount = Math.floor(this.rand() * 5_000) * 1_000_000 + Math.floor(this.rand() * 1_000_000) + 1;
      return transferTransaction({ type: "trx", from, to, amount }, ref, timestamp, this.rand);
    }
    if (r < trx + usdt) {
      const amount = BigInt(Math.floor(this.rand() * 20_000_000_000) + 1);
      const call = this.rand();
      if (call < this.opts.mix.approvals) {
        // Unlimited approvals are what wallets and dapps mostly ask for; a zero one is a revocation.
        const a = this.rand();
        const value = a < 0.4 ? MAX_UINT256 : a < 0.5 ? 0n : amount;
        return this.activity({ type: "approval", owner: from, spender: to, amount: value.toString() }, ref, timestamp);
      }
      if (call < this.opts.mix.approvals + 0.01) {
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
    return this.randomOther(from, to, ref, timestamp);
  }

  /** One non-transfer contract, drawn by the mix's `others` weights. */
  private randomOther(from: string, to: string, ref: RefBlock, timestamp: number): TronTransaction {
    let w = this.rand() * this.othersTotal;
    let kind = this.others[this.others.length - 1]![0];
    for (const [k, weight] of this.others) {
      if (w < weight) {
        kind = k;
        break;
      }
      w -= weight;
    }
    if (kind === "account_create") return accountCreateTransaction(from, to, ref, timestamp, this.rand);
    const resource = RESOURCES[Math.floor(this.rand() * RESOURCES.length)]!;
    // Energy rental services sign delegations with an active permission (Permission_id 3 in the recorded blocks).
    const permissionId = this.rand() < 0.6 ? 3 : undefined;
    const base = { owner: from, resource, ...(permissionId ? { permissionId } : {}) };
    switch (kind) {
      case "delegate": {
        const lock = this.rand() < 0.3;
        const lockPeriod = lock ? (this.rand() < 0.5 ? 28_800 : 864_000) : 0;
        return this.activity({ type: "delegate", ...base, receiver: to, amount: this.trx(10_000), lock, lockPeriod }, ref, timestamp);
      }
      case "undelegate":
        return this.activity({ type: "undelegate", ...base, receiver: to, amount: this.trx(10_000) }, ref, timestamp);
      case "freeze":
      case "unfreeze":
        return this.activity({ type: kind, ...base, amount: this.trx(100_000) }, ref, timestamp);
      case "withdraw_unfrozen":
      case "withdraw_rewards":
        return this.activity({ type: kind, owner: from, amount: this.trx(10_000) }, ref, timestamp);
      case "cancel_unfreeze":
        return this.activity({ type: kind, owner: from, resource, amount: this.trx(10_000) }, ref, timestamp);
      case "vote": {
        const votes = this.witnesses.slice(0, 1 + Math.floor(this.rand() * 3)).map((address) => ({ address, count: Math.floor(this.rand() * 10_000) + 1 }));
        return this.activity({ type: "vote", owner: from, votes }, ref, timestamp);
      }
      case "permission":
        return this.activity(
          { type: "permission", owner: from, permissions: { actives: [{ threshold: 2, keys: [{ address: from }, { address: to }] }] } },
          ref,
          timestamp,
        );
    }
  }

  /** An activity transaction; what its info adds is kept by txID. */
  private activity(spec: ActivitySpec, ref: RefBlock, timestamp: number): TronTransaction {
    const built = activityTransaction(spec, ref, timestamp, this.rand);
    if (built.extra) this.infoExtras.set(built.tx.txID, built.extra);
    return built.tx;
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
