// Webhook payloads (CONTRACT.md "Events and delivery": {id, kind, date, subscriptionId, data}) and the event view.
import { create } from "@bufbuild/protobuf";
import { randomBytes } from "node:crypto";
import { EventViewSchema, type EventView, type Transfer } from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import type { EventRow } from "./schema.ts";

export const TRANSFER_KIND = "wallet.transfer.broadcasted";
export const PING_KIND = "service.ping";

export type Envelope = {
  id: string;
  kind: string;
  date: string;
  subscriptionId: string;
  data: Record<string, unknown>;
};

export function transferData(t: Transfer): Record<string, unknown> {
  const a = t.asset;
  return {
    chainId: t.chainId,
    blockNumber: Number(t.blockNumber),
    blockHash: t.blockHash,
    blockTimestamp: Number(t.blockTimestampMs),
    txId: t.txId,
    logIndex: t.logIndex,
    from: t.from,
    to: t.to,
    amount: t.amount,
    asset: {
      type: a?.type ?? "native",
      standard: a?.standard ?? "TRX",
      contract: a?.contract ?? null,
      tokenId: a?.tokenId ?? null,
      symbol: a?.symbol ?? null,
      decimals: a?.decimals ?? null,
    },
    matchedAddresses: t.matchedAddresses.map((m) => ({ chainId: m.chainId, address: m.address, role: m.role })),
  };
}

export function envelope(id: string, kind: string, subscriptionId: string, at: Date, data: Record<string, unknown>): Envelope {
  return { id, kind, date: at.toISOString(), subscriptionId, data };
}

// A realistic transfer for the test operation, marked "test": true. On mainnet a USDT (TRC-20) transfer; on the test
// chains a TRX transfer (a token contract is only known on the chain it was deployed on).
const SAMPLE_FROM = "TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8";
const SAMPLE_TO = "TNUC9Qb1rRpS5CbWLmNMxXBjyFoydXjWFR";
const USDT_MAINNET = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";

export function sampleTransferData(chainId: string, at: Date): Record<string, unknown> {
  const mainnet = chainId === "tron:mainnet";
  const blockTimestamp = Math.floor(at.getTime() / 3000) * 3000;
  return {
    chainId,
    blockNumber: mainnet ? 61132092 : 58000000,
    blockHash: randomBytes(32).toString("hex"),
    blockTimestamp,
    txId: randomBytes(32).toString("hex"),
    logIndex: mainnet ? 0 : -1,
    from: SAMPLE_FROM,
    to: SAMPLE_TO,
    amount: mainnet ? "12500000" : "1000000",
    asset: mainnet
      ? { type: "fungible", standard: "TRC20", contract: USDT_MAINNET, tokenId: null, symbol: "USDT", decimals: 6 }
      : { type: "native", standard: "TRX", contract: null, tokenId: null, symbol: "TRX", decimals: 6 },
    matchedAddresses: [{ chainId, address: SAMPLE_TO, role: "to" }],
    test: true,
  };
}

const ENVELOPE_ORDER = ["id", "kind", "date", "subscriptionId", "data"];
const TRANSFER_ORDER = [
  "chainId", "blockNumber", "blockHash", "blockTimestamp", "txId", "logIndex", "from", "to", "amount", "asset",
  "matchedAddresses", "test",
];
const ASSET_ORDER = ["type", "standard", "contract", "tokenId", "symbol", "decimals"];

function ordered(obj: Record<string, unknown>, order: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of order) if (k in obj) out[k] = obj[k];
  for (const k of Object.keys(obj)) if (!(k in out)) out[k] = obj[k];
  return out;
}

/**
 * The body bytes of a payload. jsonb keeps no key order, so the contract's order is restored here: the same event
 * always serializes to the same bytes, on every attempt.
 */
export function renderPayload(payload: unknown): string {
  const p = payload as Record<string, unknown>;
  const data = (p.data ?? {}) as Record<string, unknown>;
  const shapedData = "txId" in data
    ? ordered({ ...data, ...(data.asset ? { asset: ordered(data.asset as Record<string, unknown>, ASSET_ORDER) } : {}) }, TRANSFER_ORDER)
    : data;
  return JSON.stringify(ordered({ ...p, data: shapedData }, ENVELOPE_ORDER));
}

export function toEventView(row: EventRow): EventView {
  return create(EventViewSchema, {
    id: row.id,
    subscriptionId: row.subscriptionId,
    kind: row.kind,
    chainId: row.chainId ?? undefined,
    status: row.status,
    attempts: row.attempts,
    deliveryCount: row.deliveryCount,
    responseStatus: row.responseStatus ?? undefined,
    responseBody: row.responseBody ?? undefined,
    payloadJson: renderPayload(row.payload),
    dateCreatedMs: BigInt(row.createdAt.getTime()),
  });
}
