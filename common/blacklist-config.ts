// BLACKLIST_CONTRACTS (docs/CONTRACT.md "Account activity"): the stablecoin contracts whose blacklist events become
// wallet.blacklist.* events, per chain. Anyone can emit an `AddedBlackList` log, so only these issuers count.
import { CHAIN_CHOICES, TRON_CHAINS, isChainId, type ChainId } from "./contract/index.ts";
import { isBase58Address } from "./tron-address.ts";

/** USDT on mainnet. */
export const DEFAULT_BLACKLIST_CONTRACTS = "tron:mainnet:TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";

/**
 * Comma-separated `chainId:address` pairs ("tron:mainnet:TR7N…,tron:nile:TXYZ…") → each chain's contracts (every
 * chain present, most with none). A chain id holds a colon itself, so a pair splits at its last one.
 */
export function parseBlacklistContracts(text: string): Record<ChainId, ReadonlySet<string>> {
  const sets = Object.fromEntries(TRON_CHAINS.map((chain) => [chain, new Set<string>()])) as Record<ChainId, Set<string>>;
  for (const pair of text.split(",").map((s) => s.trim()).filter(Boolean)) {
    const colon = pair.lastIndexOf(":");
    const chain = pair.slice(0, Math.max(colon, 0));
    const address = pair.slice(colon + 1);
    if (!isChainId(chain) || !isBase58Address(address)) {
      const expected = `chainId one of ${CHAIN_CHOICES}, address a base58check contract, e.g. ${DEFAULT_BLACKLIST_CONTRACTS}`;
      throw new Error(`BLACKLIST_CONTRACTS: "${pair}" is not chainId:address (${expected})`);
    }
    sets[chain].add(address);
  }
  return sets;
}
