// Webhook payloads (docs/CONTRACT.md "Events and delivery": {id, kind, date, subscriptionId, data}) and the event view.
import { create } from "@bufbuild/protobuf";
import { randomBytes } from "node:crypto";
import { EventViewSchema, type EventView, type Transfer } from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import { CONFIRMED, FAILED } from "../common/contract/index.ts";
import type { EventRow } from "./schema.ts";

export type Envelope = {
  id: string;
  kind: string;
  date: string;
  subscriptionId: string;
  data: Record<string, unknown>;
};

/**
 * `data` of a transfer event of `kind` (docs/CONTRACT.md "Transfer lifecycle": the final kinds carry more); `backfill`
 * is the job that made it, null for the live streams' events.
 */
export function transferData(t: Transfer, kind: string, backfill: string | null = null): Record<string, unknown> {
  const a = t.asset;
  const data: Record<string, unknown> = {
    chainId: t.chainId,
    blockNumber: Number(t.blockNumber),
    blockHash: t.blockHash,
    blockTimestamp: Number(t.blockTimestampMs),
    txId: t.txId,
    logIndex: t.logIndex,
    internalIndex: t.internalIndex,
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
    fee: t.fee === "" ? "0" : t.fee,
    memo: t.memo ?? null,
    matchedAddresses: t.matchedAddresses.map((m) => ({ chainId: m.chainId, address: m.address, role: m.role })),
    backfill,
  };
  if (kind === FAILED) data.reason = t.reason;
  if (kind === CONFIRMED || kind === FAILED) data.solidifiedBlockNumber = Number(t.solidifiedBlockNumber);
  return data;
}

export function envelope(id: string, kind: string, subscriptionId: string, at: Date, data: Record<string, unknown>): Envelope {
  return { id, kind, date: at.toISOString(), subscriptionId, data };
}

// A realistic transfer for the test operation, marked "test": true. On mainnet a USDT (TRC-20) transfer; on the test
// chains a TRX transfer (a token contract is only known on the chain it was deployed on). The final kinds carry what
// the solidified stream adds: the solidified head (about 19 blocks above the transfer's block), and for `failed` the
// commonest reason, REVERT, with the fee such a failed USDT call is charged.
const SAMPLE_FROM = "TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8";
const SAMPLE_TO = "TNUC9Qb1rRpS5CbWLmNMxXBjyFoydXjWFR";
const USDT_MAINNET = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const SAMPLE_SOLIDITY_LAG = 19;

export function sampleTransferData(chainId: string, kind: string, at: Date): Record<string, unknown> {
  const mainnet = chainId === "tron:mainnet";
  const failed = kind === FAILED;
  const blockTimestamp = Math.floor(at.getTime() / 3000) * 3000;
  const blockNumber = mainnet ? 61132092 : 58000000;
  const data: Record<string, unknown> = {
    chainId,
    blockNumber,
    blockHash: randomBytes(32).toString("hex"),
    blockTimestamp,
    txId: randomBytes(32).toString("hex"),
    // A failed call emits no log: it is decoded from its call data (docs/CONTRACT.md), so its logIndex is -1.
    logIndex: mainnet && !failed ? 0 : -1,
    internalIndex: -1,
    from: SAMPLE_FROM,
    to: SAMPLE_TO,
    amount: mainnet ? "12500000" : "1000000",
    asset: mainnet
      ? { type: "fungible", standard: "TRC20", contract: USDT_MAINNET, tokenId: null, symbol: "USDT", decimals: 6 }
      : { type: "native", standard: "TRX", contract: null, tokenId: null, symbol: "TRX", decimals: 6 },
    fee: mainnet ? (failed ? "2086320" : "13735500") : "0",
    memo: null,
    matchedAddresses: [{ chainId, address: SAMPLE_TO, role: "to" }],
    backfill: null,
    test: true,
  };
  if (failed) data.reason = "REVERT";
  if (kind === CONFIRMED || failed) data.solidifiedBlockNumber = blockNumber + SAMPLE_SOLIDITY_LAG;
  return data;
}

const ENVELOPE_ORDER = ["id", "kind", "date", "subscriptionId", "data"];
const TRANSFER_ORDER = [
  "chainId", "blockNumber", "blockHash", "blockTimestamp", "txId", "logIndex", "internalIndex", "from", "to", "amount",
  "asset", "fee", "memo", "reason", "solidifiedBlockNumber", "matchedAddresses", "test",
];
const ASSET_ORDER = ["type", "standard", "contract", "tokenId", "symbol", "decimals"];

/**
 * `obj` with the keys of `order` first (those it has), then its others in their own order; `key`, when given, is
 * always set, to `value`. Migration 0008 does the same in SQL to the payloads stored before it.
 */
function ordered(obj: Record<string, unknown>, order: readonly string[], key?: string, value?: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of order) {
    if (k === key) out[k] = value;
    else if (k in obj) out[k] = obj[k];
  }
  for (const k of Object.keys(obj)) if (!(k in out)) out[k] = obj[k];
  return out;
}

/**
 * The body bytes of a payload, in the contract's key order: made once, when the event is stored (events.payload,
 * deliverer/schema.ts), so the same event is the same bytes on every attempt, page and stream.
 */
export function renderPayload(payload: unknown): string {
  const p = payload as Record<string, unknown>;
  const data = (p.data ?? {}) as Record<string, unknown>;
  let shaped = data;
  if ("txId" in data) {
    const asset = data.asset as Record<string, unknown> | null | undefined;
    shaped = asset ? ordered(data, TRANSFER_ORDER, "asset", ordered(asset, ASSET_ORDER)) : ordered(data, TRANSFER_ORDER);
  }
  return JSON.stringify(ordered(p, ENVELOPE_ORDER, "data", shaped));
}

/** The fields of an event its view shows. */
export type EventViewRow = Pick<
  EventRow,
  "id" | "subscriptionId" | "kind" | "chainId" | "status" | "attempts" | "deliveryCount" | "responseStatus" | "responseBody" | "held" | "heldReason" | "payload" | "createdAt"
>;

export function toEventView(row: EventViewRow): EventView {
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
    // Only a pending event is held; a row held before reasons were kept shows none until the next held check.
    heldReason: row.status === "pending" && row.held ? (row.heldReason ?? undefined) : undefined,
    payloadJson: row.payload,
    dateCreatedMs: BigInt(row.createdAt.getTime()),
  });
}
