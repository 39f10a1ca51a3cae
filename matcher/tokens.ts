// Well-known TRC-20 tokens per chain: symbol and decimals for the `asset` of a transfer event. A contract address
// means something only on the chain it was deployed on (the same base58 string on Nile is another contract, or
// nothing), so the table is keyed by chain first. Unknown contracts get null symbol and decimals.
import type { ChainId } from "../common/contract/index.ts";

export interface TokenInfo {
  symbol: string;
  decimals: number;
}

const TOKENS: Record<ChainId, Record<string, TokenInfo>> = {
  "tron:mainnet": {
    TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t: { symbol: "USDT", decimals: 6 },
    TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8: { symbol: "USDC", decimals: 6 },
    TPYmHEhy5n8TCEfYGqW2rPxsghSfzghPDn: { symbol: "USDD", decimals: 18 },
    TUpMhErZL2fhh4sVNULAbNKLokS4GjC1F4: { symbol: "TUSD", decimals: 18 },
    TNUC9Qb1rRpS5CbWLmNMxXBjyFoydXjWFR: { symbol: "WTRX", decimals: 6 },
    TAFjULxiVgT4qWk6UZwjqwZXTSaGaqnVp4: { symbol: "BTT", decimals: 18 },
    TCFLL5dx5ZJdKnWuesXxi1VPwjLVmWZZy9: { symbol: "JST", decimals: 18 },
    TSSMHYeV2uE9qYH95DqyoCuNCzEL1NvU3S: { symbol: "SUN", decimals: 18 },
    TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7: { symbol: "WIN", decimals: 6 },
  },
  "tron:nile": {
    TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf: { symbol: "USDT", decimals: 6 },
  },
  "tron:shasta": {},
};

export function knownToken(chainId: ChainId, contract: string): TokenInfo | null {
  return TOKENS[chainId][contract] ?? null;
}

/** The whole table (tests check every entry is a valid address). */
export function tokenTable(): Readonly<Record<ChainId, Readonly<Record<string, TokenInfo>>>> {
  return TOKENS;
}

