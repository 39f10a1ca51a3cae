// What the activity logs (approvals, blacklist events) share: topic0 from the event's signature, arguments decoded by
// tronweb's ABI coder (ethers'), the token asset. Every argument here is static, one 32-byte word, decoded on its
// own. That coder costs ~15 µs a uint256 and ~40 µs an address (frozen objects, a checksum), so it runs only for the
// logs whose topic0 matched, and decoded words are remembered: the same addresses (routers, exchanges) and amounts
// (the unlimited allowance) recur. Cleared wholesale when full, like matcher/decode.ts's address caches.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ChainId } from "../../common/contract/index.ts";
import { MemoMap } from "../../common/timing.ts";
import { tronwebUtils } from "../../common/tron-address.ts";
import type { AssetSchema } from "../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { normalizeAddress } from "../decode.ts";
import { knownToken } from "../tokens.ts";
import type { TronLog } from "../../common/tron-node/types.ts";

/** topic0 of an event as java-tron prints it: keccak256 of the signature, 64 lowercase hex digits without 0x. */
export function eventTopic(signature: string): string {
  return tronwebUtils.id(signature).slice(2);
}

const strip0x = (hex: string): string => (hex.startsWith("0x") ? hex.slice(2) : hex);

const WORD = 64;

/**
 * A log's `count` argument words in declaration order, or null when it has not that many: the indexed arguments are
 * the topics after topic0, the others the data's words. This holds for events whose indexed parameters come first
 * (every event decoded here), so the same event decodes whether it indexes its address or not.
 */
export function eventWords(log: TronLog, count: number): string[] | null {
  const topics = log.topics ?? [];
  if (topics.length - 1 > count) return null;
  const words: string[] = [];
  for (let i = 1; i < topics.length; i++) words.push(strip0x(topics[i]!));
  const data = strip0x(log.data ?? "");
  for (let at = 0; words.length < count && at + WORD <= data.length; at += WORD) words.push(data.slice(at, at + WORD));
  return words.length === count ? words : null;
}

const WORD_CACHE_LIMIT = 100_000;
const addressWords = new MemoMap<string, string | null>(WORD_CACHE_LIMIT);
const amountWords = new MemoMap<string, string | null>(WORD_CACHE_LIMIT);

function decodeWord(cache: Map<string, string | null>, type: string, word: string, convert: (value: unknown) => string | null): string | null {
  let value = cache.get(word);
  if (value === undefined) {
    try {
      value = convert((tronwebUtils.decodeParams([], [type], `0x${word}`) as unknown[])[0]);
    } catch {
      value = null; // not hex, not one word, or an address word with bits above its 20 bytes
    }
    cache.set(word, value);
  }
  return value;
}

/** An `address` argument's word as base58check (tronweb decodes it to "41…" hex). */
export function addressArg(word: string): string | null {
  return decodeWord(addressWords, "address", word, (v) => (typeof v === "string" ? normalizeAddress(v) : null));
}

/** A `uint256` argument's word as a decimal string. */
export function amountArg(word: string): string | null {
  return decodeWord(amountWords, "uint256", word, (v) => (typeof v === "bigint" ? v.toString() : null));
}

/** A TRC-20 contract as the event's `asset`, with symbol and decimals when the token is well known on the chain. */
export function tokenAsset(chainId: ChainId, contract: string): MessageInitShape<typeof AssetSchema> {
  const token = knownToken(chainId, contract);
  return { type: "fungible", standard: "TRC20", contract, ...(token ? { symbol: token.symbol, decimals: token.decimals } : {}) };
}
