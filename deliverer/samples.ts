// The samples POST /v1/subscriptions/{id}/test sends (docs/CONTRACT.md "Events and delivery"): a realistic event of
// each kind, marked "test": true, made by the same functions as the matcher's events (deliverer/payload.ts), so a
// sample has exactly the shape of the real thing.
import { create } from "@bufbuild/protobuf";
import { randomBytes } from "node:crypto";
import { ActivitySchema, TransferSchema, type Activity } from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import {
  FAILED,
  PING,
  familyOf,
  isActivityKind,
  isTransferKind,
  type ActivityKind,
} from "../common/contract/index.ts";
import { activityData, transferData } from "./payload.ts";
import { activityAddresses, transferAddresses } from "./search-refs.ts";

// A realistic transfer, marked "test": true. On mainnet a USDT (TRC-20) transfer; on the test chains a TRX transfer (a
// token contract is only known on the chain it was deployed on). The final kinds carry what the solidified stream
// adds: the solidified head (about 19 blocks above the transfer's block), and for `failed` the commonest reason,
// REVERT, with the fee such a failed USDT call is charged.
const SAMPLE_FROM = "TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8";
const SAMPLE_TO = "TNUC9Qb1rRpS5CbWLmNMxXBjyFoydXjWFR";
const USDT_MAINNET = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const SAMPLE_SOLIDITY_LAG = 19;

function sampleBlock(chainId: string, at: Date) {
  const blockNumber = chainId === "tron:mainnet" ? 61132092 : 58000000;
  return {
    chainId,
    blockNumber: BigInt(blockNumber),
    blockHash: randomBytes(32).toString("hex"),
    blockTimestampMs: BigInt(Math.floor(at.getTime() / 3000) * 3000),
    txId: randomBytes(32).toString("hex"),
    solidifiedBlockNumber: BigInt(blockNumber + SAMPLE_SOLIDITY_LAG),
  };
}

export function sampleTransferData(chainId: string, kind: string, at: Date): Record<string, unknown> {
  const mainnet = chainId === "tron:mainnet";
  const failed = kind === FAILED;
  const transfer = create(TransferSchema, {
    ...sampleBlock(chainId, at),
    // A failed call emits no log: it is decoded from its call data (docs/CONTRACT.md), so its logIndex is -1.
    logIndex: mainnet && !failed ? 0 : -1,
    internalIndex: -1,
    from: SAMPLE_FROM,
    to: SAMPLE_TO,
    amount: mainnet ? "12500000" : "1000000",
    asset: mainnet
      ? { type: "fungible", standard: "TRC20", contract: USDT_MAINNET, symbol: "USDT", decimals: 6 }
      : { type: "native", standard: "TRX", symbol: "TRX", decimals: 6 },
    fee: mainnet ? (failed ? "2086320" : "13735500") : "0",
    matchedAddresses: [{ chainId, address: SAMPLE_TO, role: "to" }],
    reason: failed ? "REVERT" : "",
  });
  return { ...transferData(transfer, kind, null), test: true };
}

// Account activity samples: the wallet watched, and the commonest case of each family. An unlimited USDT approval to
// SunSwap's V2 router; a permission update making the wallet a 2-of-2 multi-signature account (charged 100 TRX, the
// chain's fee for it); a delegation of energy locked for a day (28,800 blocks), as rental services make them; USDT's
// issuer blacklisting the wallet. The test chains get their own USDT (Nile's is in the matcher's token table,
// Shasta's is not: its symbol and decimals are null, as for any unknown token).
const WALLET = "TXCvUayMx6AuBvS7qBa79ZAfhrwSA7vTjG";
const COSIGNER = "TPcUx2iwjomVzmX3CHDDYmnEPJFTVeyqqS";
const ROUTER = "TKzxdSv2FZKQrEqkKVgp5DcwEXBEKMg2Ax";
const ENERGY_RENTER = "TLpwX5ZEh4mHYMH98nrAt51TzrbeTnbmw4";
const MAX_UINT256 = ((1n << 256n) - 1n).toString();
/** The operations bitmap wallets give an active permission: every contract type but the account's own permission update. */
const ACTIVE_OPERATIONS = "7fff1fc0033e0000000000000000000000000000000000000000000000000000";
const SAMPLE_USDT: Record<string, { contract: string; symbol?: string; decimals?: number }> = {
  "tron:mainnet": { contract: USDT_MAINNET, symbol: "USDT", decimals: 6 },
  "tron:nile": { contract: "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf", symbol: "USDT", decimals: 6 },
  "tron:shasta": { contract: "TG3XXyExBkPp9nzdajDZsozEu4BkaSJozs" },
};

/** A realistic activity of `kind`'s family on `chainId`. */
export function sampleActivity(chainId: string, kind: ActivityKind, at: Date): Activity {
  const mainnet = chainId === "tron:mainnet";
  const usdt = { type: "fungible", standard: "TRC20", ...(SAMPLE_USDT[chainId] ?? SAMPLE_USDT["tron:mainnet"]!) };
  // The solidified head is read for the .confirmed kinds only (activityData).
  const base = sampleBlock(chainId, at);
  const wallet = (role: string) => [{ chainId, address: WALLET, role }];
  const keys = [{ address: WALLET, weight: 1n }, { address: COSIGNER, weight: 1n }];
  switch (familyOf(kind)) {
    case "approval":
      return create(ActivitySchema, {
        ...base, logIndex: 0, fee: mainnet ? "4841560" : "0", matchedAddresses: wallet("owner"),
        detail: { case: "approval", value: { owner: WALLET, spender: ROUTER, amount: MAX_UINT256, asset: usdt } },
      });
    case "permission":
      return create(ActivitySchema, {
        ...base, logIndex: -1, fee: "100000000", matchedAddresses: wallet("owner"),
        detail: {
          case: "permission",
          value: {
            address: WALLET,
            owner: { name: "owner", threshold: 2n, keys },
            actives: [{ name: "active", threshold: 2n, operations: ACTIVE_OPERATIONS, keys }],
          },
        },
      });
    case "resource":
      return create(ActivitySchema, {
        ...base, logIndex: -1, fee: "0", matchedAddresses: wallet("owner"),
        detail: {
          case: "resource",
          value: { type: "delegate", owner: WALLET, resource: "ENERGY", amount: "5126000000", receiver: ENERGY_RENTER, lock: true, lockPeriod: 28800n },
        },
      });
    case "blacklist":
      return create(ActivitySchema, {
        ...base, logIndex: 0, fee: "0", matchedAddresses: wallet("blacklisted"),
        detail: { case: "blacklist", value: { type: "added", address: WALLET, asset: usdt } },
      });
  }
}

/** A test event's data and the fields its row is found by (chain, transaction, log, search addresses). */
export interface TestEventSample {
  data: Record<string, unknown>;
  chainId: string | null;
  txId: string | null;
  logIndex: number | null;
  addresses: string[];
}

/**
 * The test event of `kind` (service.ping, a transfer or an activity kind), on tron:mainnet when the key has it, else on
 * its first chain; service.ping has no chain.
 */
export function testEventSample(kind: string, chains: readonly string[], at: Date): TestEventSample {
  if (kind === PING) {
    return { data: { message: "This is a test event from the TRON webhook service." }, chainId: null, txId: null, logIndex: null, addresses: [] };
  }
  const chainId = chains.includes("tron:mainnet") ? "tron:mainnet" : (chains[0] ?? "tron:mainnet");
  if (isTransferKind(kind)) {
    const data = sampleTransferData(chainId, kind, at);
    return {
      data,
      chainId,
      txId: data.txId as string,
      logIndex: data.logIndex as number,
      addresses: transferAddresses(data.from as string, data.to as string),
    };
  }
  if (!isActivityKind(kind)) throw new Error(`no sample of ${kind}`);
  const activity = sampleActivity(chainId, kind, at);
  return {
    data: { ...activityData(activity, kind, null), test: true },
    chainId,
    txId: activity.txId,
    logIndex: activity.logIndex,
    addresses: activityAddresses(activity),
  };
}
