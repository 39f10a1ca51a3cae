// The transfer every delivery benchmark enqueues: a USDT (TRC-20) transfer with random hashes, as the matcher sends it.
import { randomBytes } from "node:crypto";

export function transfer(i: number, chainId = "tron:mainnet") {
  return {
    chainId,
    blockNumber: BigInt(70_000_000 + Math.floor(i / 50)),
    blockHash: randomBytes(32).toString("hex"),
    blockTimestampMs: BigInt(Date.now()),
    txId: randomBytes(32).toString("hex"),
    logIndex: i % 3,
    from: "TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8",
    to: "TNUC9Qb1rRpS5CbWLmNMxXBjyFoydXjWFR",
    amount: String(1_000_000 + i),
    asset: { type: "fungible", standard: "TRC20", contract: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", symbol: "USDT", decimals: 6 },
    matchedAddresses: [{ chainId, address: "TNUC9Qb1rRpS5CbWLmNMxXBjyFoydXjWFR", role: "to" }],
  };
}
