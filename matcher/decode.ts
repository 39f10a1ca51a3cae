// Transfers out of java-tron blocks and transaction infos: TRX (TransferContract), TRC-10 (TransferAssetContract)
// and TRC-20 `Transfer` logs. TRC-20 comes from the logs, never from calldata, so a transfer made by another contract
// (a DEX, a multisig wallet, a batch sender) counts exactly like a direct `transfer(...)` call. Both java-tron JSON
// forms are accepted: visible=false (hex addresses, hex asset names) and visible=true (base58, plain text).
import { evmWordToBase58, hexToBase58 } from "../common/tron-address.ts";
import type { TronBlock, TronTransaction, TronTransactionInfo } from "./tron-types.ts";

export type TransferStandard = "TRX" | "TRC10" | "TRC20";

export interface DecodedTransfer {
  txId: string;
  /** Position of the Transfer log in the transaction's log array; -1 for TRX and TRC-10. */
  logIndex: number;
  from: string;
  to: string;
  /** Base units, decimal. */
  amount: string;
  standard: TransferStandard;
  /** TRC-20 contract (base58), else null. */
  contract: string | null;
  /** TRC-10 token id, else null. */
  tokenId: string | null;
  /** Position in the transaction info's internal_transactions for an internal transfer; -1 for every other. */
  internalIndex: number;
  /** The transaction info's fee in sun, decimal; "0" when none. */
  fee: string;
  /** UTF-8 text of raw_data.data, "0x…" hex when it is not valid UTF-8, or null. */
  memo: string | null;
  /** java-tron's contractRet verbatim: "SUCCESS", or the failure ("REVERT", "OUT_OF_ENERGY", …). */
  result: string;
  /** raw_data.expiration (ms since epoch): past it, a transaction no solidified block includes is dropped. */
  expirationMs: number;
}

/** The lifecycle fields of a transfer before its transaction's fee, memo and outcome are filled in. */
const LIFECYCLE_DEFAULTS = { internalIndex: -1, fee: "0", memo: null, result: "SUCCESS", expirationMs: 0 } as const;

/** keccak256("Transfer(address,address,uint256)"). */
export const TRANSFER_TOPIC = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

const HEX_ADDRESS_41 = /^41[0-9a-fA-F]{40}$/;
const HEX_ADDRESS_20 = /^[0-9a-fA-F]{40}$/;
const HEX_WORD = /^[0-9a-fA-F]{64}$/;

// Base58check encoding costs tens of microseconds in JavaScript and the same addresses (exchanges, the USDT
// contract) recur block after block, so conversions are remembered. Cleared wholesale when full: cheaper than
// LRU bookkeeping and the hot set refills within a few blocks.
const BASE58_CACHE_LIMIT = 500_000;
const base58Cache = new Map<string, string>();

function remember(key: string, make: () => string): string {
  let value = base58Cache.get(key);
  if (value === undefined) {
    value = make();
    if (base58Cache.size >= BASE58_CACHE_LIMIT) base58Cache.clear();
    base58Cache.set(key, value);
  }
  return value;
}

/** An address in any form java-tron prints (41-hex, 20-byte hex in logs, base58) as base58check. */
export function normalizeAddress(address: string): string | null {
  if (HEX_ADDRESS_41.test(address)) return remember(address.toLowerCase(), () => hexToBase58(address.toLowerCase()));
  if (HEX_ADDRESS_20.test(address)) {
    const hex = `41${address.toLowerCase()}`;
    return remember(hex, () => hexToBase58(hex));
  }
  if (address.startsWith("0x") && HEX_ADDRESS_20.test(address.slice(2))) return normalizeAddress(address.slice(2));
  // visible=true: the node already encoded it.
  if (address.startsWith("T") && address.length === 34) return address;
  return null;
}

// Topic words and log addresses as the node printed them -> base58, so a recurring one costs one map lookup (no
// validation regex, slicing or lower-casing); only well-formed inputs are ever stored.
const rawWordCache = new Map<string, string>();
const rawAddressCache = new Map<string, string>();

function rememberRaw(cache: Map<string, string>, raw: string, value: string): string {
  if (cache.size >= BASE58_CACHE_LIMIT) cache.clear();
  cache.set(raw, value);
  return value;
}

function wordToAddress(word: string): string | null {
  const hit = rawWordCache.get(word);
  if (hit !== undefined) return hit;
  const w = word.startsWith("0x") ? word.slice(2) : word;
  if (!HEX_WORD.test(w)) return null;
  // The last 20 bytes are the address; the 12 bytes before may hold anything (some encoders put 0x41 there).
  return rememberRaw(rawWordCache, word, remember(`w${w.slice(24).toLowerCase()}`, () => evmWordToBase58(w)));
}

/** normalizeAddress for the addresses that recur most (a log's contract), remembered by their printed form. */
function logAddress(address: string): string | null {
  const hit = rawAddressCache.get(address);
  if (hit !== undefined) return hit;
  const normal = normalizeAddress(address);
  return normal === null ? null : rememberRaw(rawAddressCache, address, normal);
}

function isVisibleForm(tx: TronTransaction): boolean {
  const owner = tx.raw_data.contract[0]?.parameter.value.owner_address;
  return typeof owner === "string" && !HEX_ADDRESS_41.test(owner);
}

/** java-tron marks a transaction's outcome in ret[0].contractRet; only SUCCESS makes `broadcasted` events. */
export function transactionSucceeded(tx: TronTransaction): boolean {
  return tx.ret?.[0]?.contractRet === "SUCCESS";
}

/** A contract call's outcome as the receipt records it (REVERT, OUT_OF_ENERGY, … are failures). */
export function transactionInfoSucceeded(info: TronTransactionInfo): boolean {
  if (info.result === "FAILED") return false;
  return info.receipt?.result === undefined || info.receipt.result === "SUCCESS";
}

function decodeTokenId(assetName: string, visible: boolean): string {
  // visible=false prints the token id's ASCII as hex ("31303035303233" = "1005023"); visible=true prints the text.
  if (visible) return assetName;
  return Buffer.from(assetName, "hex").toString("utf8");
}

function toAmount(value: unknown): string | null {
  if (typeof value === "number" && Number.isInteger(value) && value > 0) return BigInt(value).toString();
  if (typeof value === "string" && /^\d+$/.test(value) && BigInt(value) > 0n) return BigInt(value).toString();
  return null;
}

/** The TRX or TRC-10 transfer a transaction makes, if it is one and it succeeded. */
export function decodeTransaction(tx: TronTransaction): DecodedTransfer | null {
  const contract = tx.raw_data.contract[0];
  if (!contract || !transactionSucceeded(tx)) return null;
  const isTrx = contract.type === "TransferContract";
  const isTrc10 = contract.type === "TransferAssetContract";
  if (!isTrx && !isTrc10) return null;
  const v = contract.parameter.value;
  if (typeof v.owner_address !== "string" || typeof v.to_address !== "string") return null;
  const from = normalizeAddress(v.owner_address);
  const to = normalizeAddress(v.to_address);
  const amount = toAmount(v.amount);
  if (!from || !to || amount === null) return null;
  if (isTrx) {
    return { txId: tx.txID, logIndex: -1, from, to, amount, standard: "TRX", contract: null, tokenId: null, ...LIFECYCLE_DEFAULTS };
  }
  if (typeof v.asset_name !== "string" || v.asset_name === "") return null;
  const tokenId = decodeTokenId(v.asset_name, isVisibleForm(tx));
  return { txId: tx.txID, logIndex: -1, from, to, amount, standard: "TRC10", contract: null, tokenId, ...LIFECYCLE_DEFAULTS };
}

function isTransferTopic(topic: string): boolean {
  if (topic === TRANSFER_TOPIC) return true; // how java-tron prints it
  const t0 = topic.startsWith("0x") ? topic.slice(2) : topic;
  return t0.toLowerCase() === TRANSFER_TOPIC;
}

const ZERO_HIGH_DIGITS = "0".repeat(51);

/** A validated 64-digit hex word as a decimal string; below 2^52 (almost every amount) without a BigInt. */
function wordToDecimal(word: string): string {
  if (word.startsWith(ZERO_HIGH_DIGITS)) return String(Number.parseInt(word.slice(51), 16));
  return BigInt(`0x${word}`).toString();
}

/** Every fungible TRC-20 Transfer log of a successful transaction (3 topics; TRC-721's 4-topic logs are not). */
export function decodeTransactionInfo(info: TronTransactionInfo): DecodedTransfer[] {
  const logs = info.log;
  if (!logs || logs.length === 0 || !transactionInfoSucceeded(info)) return [];
  const out: DecodedTransfer[] = [];
  for (let i = 0; i < logs.length; i++) {
    const log = logs[i]!;
    const topics = log.topics;
    if (!topics || topics.length !== 3) continue;
    if (!isTransferTopic(topics[0]!)) continue;
    const data = log.data?.startsWith("0x") ? log.data.slice(2) : (log.data ?? "");
    const word = data.length === 64 ? data : data.slice(0, 64);
    if (word.length < 64 || !HEX_WORD.test(word)) continue;
    const from = wordToAddress(topics[1]!);
    const to = wordToAddress(topics[2]!);
    const contract = logAddress(log.address);
    if (!from || !to || !contract) continue;
    const amount = wordToDecimal(word);
    out.push({ txId: info.id, logIndex: i, from, to, amount, standard: "TRC20", contract, tokenId: null, ...LIFECYCLE_DEFAULTS });
  }
  return out;
}

const LOG_EMITTING = new Set(["TriggerSmartContract", "CreateSmartContract"]);

/** Whether any transaction of the block can have emitted logs (else the transaction-info request is skipped). */
export function blockNeedsTransactionInfo(block: TronBlock): boolean {
  for (const tx of block.transactions ?? []) {
    const type = tx.raw_data.contract[0]?.type;
    if (type !== undefined && LOG_EMITTING.has(type) && transactionSucceeded(tx)) return true;
  }
  return false;
}

/**
 * Every transfer of a block in block order (a transaction's native transfer, then its logs in order). `infos` are
 * the block's transaction infos, or null when the block needs none (blockNeedsTransactionInfo is false).
 */
export function decodeBlock(block: TronBlock, infos: TronTransactionInfo[] | null): DecodedTransfer[] {
  const txs = block.transactions ?? [];
  const infoById = new Map<string, TronTransactionInfo>();
  if (infos) for (const info of infos) infoById.set(info.id, info);
  const out: DecodedTransfer[] = [];
  for (const tx of txs) {
    const native = decodeTransaction(tx);
    if (native) out.push(native);
    if (!transactionSucceeded(tx)) continue;
    const info = infoById.get(tx.txID);
    if (info) for (const t of decodeTransactionInfo(info)) out.push(t);
  }
  return out;
}
