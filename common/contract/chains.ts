// The chains of the public API, as CAIP-2 ids: what an address entry, a key's chains and the event filters accept.
import { orList } from "./words.ts";

export const TRON_CHAINS = ["tron:mainnet", "tron:nile", "tron:shasta"] as const;
export type ChainId = (typeof TRON_CHAINS)[number];

export function isChainId(value: string): value is ChainId {
  return (TRON_CHAINS as readonly string[]).includes(value);
}

/** "tron:mainnet, tron:nile or tron:shasta", for messages and descriptions. */
export const CHAIN_CHOICES = orList(TRON_CHAINS);
