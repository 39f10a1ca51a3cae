// Transfers out of java-tron blocks and transaction infos, successful or failed (consumers filter on `result`):
// - TRX (TransferContract) and TRC-10 (TransferAssetContract), whatever their outcome and amount (zero included: the
//   match conditions drop zero-value transfers unless asked for them);
// - TRC-20 `Transfer` logs of successful calls. A successful call's TRC-20 transfers come from the logs, never from
//   calldata, so a transfer made by another contract (a DEX, a multisig wallet, a batch sender) counts exactly like a
//   direct `transfer(...)` call;
// - a failed TriggerSmartContract emits no log, so what it would have moved is read from its call data:
//   `transfer(address,uint256)` / `transferFrom(address,address,uint256)` on any contract, and its `call_value`
//   (TRX sent to the contract);
// - `internal_transactions` of the transaction info: TRX and TRC-10 a contract moved during execution.
// Both java-tron JSON forms are accepted: visible=false (hex addresses, hex asset names) and visible=true (base58,
// plain text).
import { evmWordToBase58, hexToBase58 } from "../common/tron-address.ts";
import type { TronBlock, TronInternalTransaction, TronTransaction, TronTransactionInfo } from "../common/tron-node/types.ts";
import { MemoMap } from "../common/timing.ts";
import { ACTIVITY_CONTRACTS } from "./activity/contracts.ts";

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

/** What every transfer of one transaction shares: its fee, memo, outcome and expiration. */
export interface TxContext {
  fee: string;
  memo: string | null;
  result: string;
  expirationMs: number;
}

/** A transaction's context when nothing but the transaction is known (no info: fee "0"). */
const SUCCESS_CONTEXT: TxContext = { fee: "0", memo: null, result: "SUCCESS", expirationMs: 0 };

/** keccak256("Transfer(address,address,uint256)"). */
export const TRANSFER_TOPIC = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

const HEX_ADDRESS_41 = /^41[0-9a-fA-F]{40}$/;
const HEX_ADDRESS_20 = /^[0-9a-fA-F]{40}$/;
const HEX_WORD = /^[0-9a-fA-F]{64}$/;

// Base58check encoding costs tens of microseconds in JavaScript and the same addresses (exchanges, the USDT
// contract) recur block after block, so conversions are remembered. Cleared wholesale when full: cheaper than
// LRU bookkeeping and the hot set refills within a few blocks.
const BASE58_CACHE_LIMIT = 500_000;
const base58Cache = new MemoMap<string, string>(BASE58_CACHE_LIMIT);

function remember(key: string, make: () => string): string {
  let value = base58Cache.get(key);
  if (value === undefined) {
    value = make();
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
const rawWordCache = new MemoMap<string, string>(BASE58_CACHE_LIMIT);
const rawAddressCache = new MemoMap<string, string>(BASE58_CACHE_LIMIT);

function rememberRaw(cache: Map<string, string>, raw: string, value: string): string {
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
export function logAddress(address: string): string | null {
  const hit = rawAddressCache.get(address);
  if (hit !== undefined) return hit;
  const normal = normalizeAddress(address);
  return normal === null ? null : rememberRaw(rawAddressCache, address, normal);
}

function isVisibleForm(tx: TronTransaction): boolean {
  const owner = tx.raw_data.contract[0]?.parameter.value.owner_address;
  return typeof owner === "string" && !HEX_ADDRESS_41.test(owner);
}

export const SUCCESS = "SUCCESS";

/** java-tron's contractRet of a transaction ("SUCCESS", "REVERT", "OUT_OF_ENERGY", …); "" when it has none. */
export function transactionResult(tx: TronTransaction): string {
  return tx.ret?.[0]?.contractRet ?? "";
}

/** A contract call's outcome as the receipt records it (REVERT, OUT_OF_ENERGY, … are failures). */
export function transactionInfoSucceeded(info: TronTransactionInfo): boolean {
  if (info.result === "FAILED") return false;
  return info.receipt?.result === undefined || info.receipt.result === SUCCESS;
}

function decodeTokenId(assetName: string, visible: boolean): string {
  // visible=false prints the token id's ASCII as hex ("31303035303233" = "1005023"); visible=true prints the text.
  if (visible) return assetName;
  return Buffer.from(assetName, "hex").toString("utf8");
}

/** A non-negative integer amount as a decimal string (zero included), or null when it is not one. */
export function toAmount(value: unknown): string | null {
  if (typeof value === "number") {
    if (!Number.isInteger(value) || value < 0) return null;
    // Past 2^53 String() would print an exponent; BigInt prints every digit the double holds.
    return Number.isSafeInteger(value) ? String(value) : BigInt(value).toString();
  }
  if (typeof value === "string" && /^\d+$/.test(value)) return BigInt(value).toString();
  return null;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
const HEX_EVEN = /^(?:[0-9a-fA-F]{2})+$/;

/** raw_data.data (hex) as UTF-8 text, or "0x…" when it is not valid UTF-8; null when there is none. */
export function decodeMemo(data: unknown): string | null {
  if (typeof data !== "string" || data === "" || !HEX_EVEN.test(data)) return null;
  const bytes = Buffer.from(data, "hex");
  try {
    return utf8.decode(bytes);
  } catch {
    return `0x${data.toLowerCase()}`;
  }
}

/** The transaction info's fee in sun, decimal; "0" without an info or a fee. */
export function feeOf(info: TronTransactionInfo | undefined): string {
  const fee = info?.fee;
  if (typeof fee === "number" && Number.isInteger(fee) && fee > 0) return String(fee);
  if (typeof fee === "string" && /^\d+$/.test(fee)) return BigInt(fee).toString();
  return "0";
}

/**
 * A transaction's outcome: its contractRet, else (a node that omits it) its receipt's; a plain transfer without
 * either succeeded.
 */
export function outcomeOf(tx: TronTransaction, info: TronTransactionInfo | undefined): string {
  const result = transactionResult(tx);
  if (result !== "") return result;
  return info && !transactionInfoSucceeded(info) ? (info.receipt?.result ?? "FAILED") : SUCCESS;
}

function contextOf(tx: TronTransaction, info: TronTransactionInfo | undefined): TxContext {
  const raw = tx.raw_data;
  return {
    fee: feeOf(info),
    memo: raw.data === undefined ? null : decodeMemo(raw.data),
    result: outcomeOf(tx, info),
    expirationMs: typeof raw.expiration === "number" ? raw.expiration : 0,
  };
}

/** The TRX or TRC-10 transfer a transaction makes, if it is one (whatever its outcome; zero amounts included). */
export function decodeTransaction(tx: TronTransaction, ctx: TxContext = contextOf(tx, undefined)): DecodedTransfer | null {
  const contract = tx.raw_data.contract[0];
  if (!contract) return null;
  const isTrx = contract.type === "TransferContract";
  const isTrc10 = contract.type === "TransferAssetContract";
  if (!isTrx && !isTrc10) return null;
  const v = contract.parameter.value;
  if (typeof v.owner_address !== "string" || typeof v.to_address !== "string") return null;
  const from = normalizeAddress(v.owner_address);
  const to = normalizeAddress(v.to_address);
  // java-tron omits a zero amount from the JSON (proto3 default).
  const amount = v.amount === undefined ? "0" : toAmount(v.amount);
  if (!from || !to || amount === null) return null;
  if (isTrx) {
    return { txId: tx.txID, logIndex: -1, internalIndex: -1, from, to, amount, standard: "TRX", contract: null, tokenId: null, ...ctx };
  }
  if (typeof v.asset_name !== "string" || v.asset_name === "") return null;
  const tokenId = decodeTokenId(v.asset_name, isVisibleForm(tx));
  return { txId: tx.txID, logIndex: -1, internalIndex: -1, from, to, amount, standard: "TRC10", contract: null, tokenId, ...ctx };
}

const SELECTOR_TRANSFER = "a9059cbb";
const SELECTOR_TRANSFER_FROM = "23b872dd";

/** A hex word of call data (validated) as an address: its last 20 bytes. */
function calldataAddress(data: string, at: number): string | null {
  const w = data.slice(at, at + 64);
  if (w.length !== 64 || !HEX_WORD.test(w)) return null;
  return remember(`w${w.slice(24).toLowerCase()}`, () => evmWordToBase58(w));
}

function calldataAmount(data: string, at: number): string | null {
  const w = data.slice(at, at + 64);
  if (w.length !== 64 || !HEX_WORD.test(w)) return null;
  return wordToDecimal(w);
}

/**
 * What a failed TriggerSmartContract would have moved: a `transfer`/`transferFrom` decoded from its call data (the
 * token is the called contract), and otherwise its `call_value` when non-zero (TRX to the contract). One transfer at
 * most: both would have the same identity (logIndex and internalIndex -1), and the token call is what was meant.
 */
export function decodeFailedCall(tx: TronTransaction, ctx: TxContext): DecodedTransfer | null {
  const contract = tx.raw_data.contract[0];
  if (!contract || contract.type !== "TriggerSmartContract") return null;
  const v = contract.parameter.value;
  if (typeof v.owner_address !== "string" || typeof v.contract_address !== "string") return null;
  const owner = normalizeAddress(v.owner_address);
  const token = normalizeAddress(v.contract_address);
  if (!owner || !token) return null;
  const data = typeof v.data === "string" ? (v.data.startsWith("0x") ? v.data.slice(2) : v.data) : "";
  const selector = data.slice(0, 8).toLowerCase();
  let from: string | null = null;
  let to: string | null = null;
  let amount: string | null = null;
  if (selector === SELECTOR_TRANSFER) {
    from = owner;
    to = calldataAddress(data, 8);
    amount = calldataAmount(data, 72);
  } else if (selector === SELECTOR_TRANSFER_FROM) {
    from = calldataAddress(data, 8);
    to = calldataAddress(data, 72);
    amount = calldataAmount(data, 136);
  }
  if (from && to && amount !== null) {
    return { txId: tx.txID, logIndex: -1, internalIndex: -1, from, to, amount, standard: "TRC20", contract: token, tokenId: null, ...ctx };
  }
  const callValue = v.call_value === undefined ? null : toAmount(v.call_value);
  if (callValue === null || callValue === "0") return null;
  return { txId: tx.txID, logIndex: -1, internalIndex: -1, from: owner, to: token, amount: callValue, standard: "TRX", contract: null, tokenId: null, ...ctx };
}

/**
 * The TRX and TRC-10 a contract moved during execution: each `internal_transactions` entry with a non-zero value
 * that was not `rejected`, with internalIndex = its position in the array. java-tron records one callValueInfo per
 * entry; the first non-zero one is the entry's transfer (a TRC-10 one when it names a tokenId).
 */
export function decodeInternalTransactions(info: TronTransactionInfo, ctx: TxContext): DecodedTransfer[] {
  const list = info.internal_transactions;
  if (!list || list.length === 0) return [];
  const out: DecodedTransfer[] = [];
  for (let i = 0; i < list.length; i++) {
    const entry = list[i] as TronInternalTransaction;
    if (!entry || entry.rejected === true || !entry.callValueInfo) continue;
    let value: { callValue?: number | string; tokenId?: string } | undefined;
    let amount: string | null = null;
    for (const cv of entry.callValueInfo) {
      const a = cv?.callValue === undefined ? null : toAmount(cv.callValue);
      if (a !== null && a !== "0") {
        value = cv;
        amount = a;
        break;
      }
    }
    if (!value || amount === null) continue;
    if (typeof entry.caller_address !== "string" || typeof entry.transferTo_address !== "string") continue;
    const from = normalizeAddress(entry.caller_address);
    const to = normalizeAddress(entry.transferTo_address);
    if (!from || !to) continue;
    const tokenId = typeof value.tokenId === "string" && value.tokenId !== "" && value.tokenId !== "_" ? value.tokenId : null;
    out.push({
      txId: info.id,
      logIndex: -1,
      internalIndex: i,
      from,
      to,
      amount,
      standard: tokenId === null ? "TRX" : "TRC10",
      contract: null,
      tokenId,
      ...ctx,
    });
  }
  return out;
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
export function decodeTransactionInfo(info: TronTransactionInfo, ctx: TxContext = SUCCESS_CONTEXT): DecodedTransfer[] {
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
    out.push({ txId: info.id, logIndex: i, internalIndex: -1, from, to, amount, standard: "TRC20", contract, tokenId: null, ...ctx });
  }
  return out;
}

// Whose transaction info can matter: transfers and contract calls carry a fee, calls also logs (transfers, approvals,
// blacklist events), internal transfers and (failed) their receipt; the account activity contracts carry a fee, and
// the withdrawals and the unfreeze cancellation their amounts (matcher/activity/). Other system contracts need none.
const NEEDS_INFO = new Set([
  "TransferContract",
  "TransferAssetContract",
  "TriggerSmartContract",
  "CreateSmartContract",
  ...ACTIVITY_CONTRACTS,
]);

/** Whether any transaction of the block has a fee, logs or internal transfers to read (else the request is skipped). */
export function blockNeedsTransactionInfo(block: TronBlock): boolean {
  for (const tx of block.transactions ?? []) {
    const type = tx.raw_data.contract[0]?.type;
    if (type !== undefined && NEEDS_INFO.has(type)) return true;
  }
  return false;
}

/**
 * Every transfer of a block in block order: per transaction, its native transfer (or, for a failed call, what the
 * call would have moved), then its TRC-20 logs in order, then its internal transfers in order. `infos` are the
 * block's transaction infos, or null when the block needs none (blockNeedsTransactionInfo is false).
 */
export function decodeBlock(block: TronBlock, infos: TronTransactionInfo[] | null): DecodedTransfer[] {
  const txs = block.transactions ?? [];
  const infoById = new Map<string, TronTransactionInfo>();
  if (infos) for (const info of infos) infoById.set(info.id, info);
  const out: DecodedTransfer[] = [];
  for (const tx of txs) {
    const info = infoById.get(tx.txID);
    const ctx = contextOf(tx, info);
    const type = tx.raw_data.contract[0]?.type;
    if (type === "TransferContract" || type === "TransferAssetContract") {
      const native = decodeTransaction(tx, ctx);
      if (native) out.push(native);
    } else if (ctx.result !== SUCCESS) {
      const failed = decodeFailedCall(tx, ctx);
      if (failed) out.push(failed);
    } else if (info && transactionInfoSucceeded(info)) {
      for (const t of decodeTransactionInfo(info, ctx)) out.push(t);
    }
    if (info) for (const t of decodeInternalTransactions(info, ctx)) out.push(t);
  }
  return out;
}
