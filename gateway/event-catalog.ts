// What a customer's endpoint receives, for the OpenAPI document's `webhooks` section and the README's "Events":
// one payload schema per event kind (docs/CONTRACT.md "Events and delivery" and "Transfer lifecycle"), when each fires,
// the guarantees a receiver can build on, the delivery headers and a full example of each, signed for real.
import { t, type Static, type TSchema } from "elysia";
import { CHAIN_CHOICES, type EventKind } from "../common/contract/index.ts";
import { renderPayload } from "../deliverer/payload.ts";
import { deliveryHeaders } from "../deliverer/sign.ts";

const ChainId = t.String({ description: `CAIP-2 chain id: ${CHAIN_CHOICES}.`, examples: ["tron:mainnet"] });
const Address = t.String({ description: "Base58check TRON address (T..., 34 characters).", examples: ["TPcUx2iwjomVzmX3CHDDYmnEPJFTVeyqqS"] });
const Nullable = <T extends TSchema>(schema: T, description: string) => t.Union([schema, t.Null()], { description });

export const AssetSchema = t.Object(
  {
    type: t.Union([t.Literal("native"), t.Literal("fungible")], { description: "native is TRX; fungible is TRC-10 or TRC-20." }),
    standard: t.Union([t.Literal("TRX"), t.Literal("TRC10"), t.Literal("TRC20")]),
    contract: Nullable(t.String(), "The TRC-20 contract (T...); null for TRX and TRC-10."),
    tokenId: Nullable(t.String(), "The TRC-10 token id; null otherwise."),
    symbol: Nullable(t.String(), "TRX, or the symbol of a well-known token on this chain; null when unknown."),
    decimals: Nullable(t.Integer(), "6 for TRX, or the decimals of a well-known token; null when unknown."),
  },
  { title: "Asset" },
);

export const MatchedAddressSchema = t.Object(
  {
    chainId: ChainId,
    address: Address,
    role: t.Union([t.Literal("from"), t.Literal("to")], { description: "A transfer from a watched address to itself lists both roles." }),
  },
  { title: "MatchedAddress" },
);

/** The fields every transfer kind carries: the transfer, where it was seen, and which watched addresses it touched. */
const transferFields = {
  chainId: ChainId,
  blockNumber: t.Integer({ description: "The block the transfer is in (for failed/dropped: the block a fork replaced)." }),
  blockHash: t.String({ description: "That block's id, 64 hex characters." }),
  blockTimestamp: t.Integer({ description: "That block's time, milliseconds since the Unix epoch." }),
  txId: t.String({ description: "The transaction id, 64 hex characters." }),
  logIndex: t.Integer({
    description: "0-based position of the TRC-20 Transfer log in the transaction's log array; -1 for TRX, TRC-10, internal and failed transfers.",
  }),
  from: Address,
  to: Address,
  amount: t.String({ description: "Decimal string in the asset's base units (sun for TRX).", examples: ["6868769"] }),
  asset: AssetSchema,
  matchedAddresses: t.Array(MatchedAddressSchema, { description: "The watched addresses this transfer touched, with their role." }),
  internalIndex: t.Integer({
    description: "0-based position in the transaction info's internal_transactions for a transfer made by a contract; -1 otherwise.",
  }),
  fee: t.String({ description: "The transaction's fee in sun, as a decimal string; \"0\" when none." }),
  memo: Nullable(t.String(), "The transaction's memo (raw_data.data) as UTF-8 text, \"0x...\" hex when it is not valid UTF-8, or null."),
  backfill: Nullable(
    t.String(),
    "The backfill job (bf_...) that made this event from a past block (POST /v1/subscriptions/{id}/backfills); null on every event of the live streams.",
  ),
  test: t.Optional(t.Literal(true, { description: "Present (true) only on samples sent by POST /v1/subscriptions/{id}/test." })),
};

const solidifiedBlockNumber = t.Integer({ description: "The solidified head when the event was made." });

export const BroadcastedDataSchema = t.Object(transferFields, { title: "TransferBroadcastedData" });
export const ConfirmedDataSchema = t.Object({ ...transferFields, solidifiedBlockNumber }, { title: "TransferConfirmedData" });
export const FailedDataSchema = t.Object(
  {
    ...transferFields,
    reason: t.String({
      description: "java-tron's contractRet verbatim (REVERT, OUT_OF_ENERGY, ...) for a failed transaction; dropped for one a fork removed that never came back.",
      examples: ["REVERT"],
    }),
    solidifiedBlockNumber,
  },
  { title: "TransferFailedData" },
);
export const PingDataSchema = t.Object({ message: t.String() }, { title: "PingData" });

export type BroadcastedData = Static<typeof BroadcastedDataSchema>;
export type ConfirmedData = Static<typeof ConfirmedDataSchema>;
export type FailedData = Static<typeof FailedDataSchema>;
export type PingData = Static<typeof PingDataSchema>;

export interface Envelope<D> {
  id: string;
  kind: EventKind;
  date: string;
  subscriptionId: string;
  data: D;
}

// The examples are real mainnet transactions: one USDT payment of 6.868769 from TPcUx2iw... that failed four times
// with REVERT and once with OUT_OF_ENERGY in block 50,568,556 before it went through in the same block (tx ids, fees,
// addresses, amounts and block time as recorded). That block was not recorded, so its hash is made up after the
// 8-byte block number that starts every TRON block id.
const BLOCK = {
  chainId: "tron:mainnet",
  blockNumber: 50568556,
  blockHash: "0000000003039d6c5a4f1e9b7c2d8e3f60a1b2c3d4e5f6071829304a5b6c7d8e",
  blockTimestamp: 1682319087000,
};
const USDT = { type: "fungible", standard: "TRC20", contract: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", tokenId: null, symbol: "USDT", decimals: 6 } as const;
const PAYER = "TPcUx2iwjomVzmX3CHDDYmnEPJFTVeyqqS";
const PAYEE = "TXCvUayMx6AuBvS7qBa79ZAfhrwSA7vTjG";
const SUBSCRIPTION_ID = "sub_01JDX4Q3ZK7M2N8P5R6S9T0V1W";

const payment = {
  ...BLOCK,
  txId: "b9ddf01476960571422ad5b62da29f4100aad44a295307b0c3ea728dacc3fdcb",
  logIndex: 0,
  from: PAYER,
  to: PAYEE,
  amount: "6868769",
  asset: USDT,
  matchedAddresses: [{ chainId: "tron:mainnet", address: PAYEE, role: "to" as const }],
  internalIndex: -1,
  fee: "13395900",
  memo: null,
  backfill: null,
};

export const EXAMPLE_PAYLOADS: {
  "wallet.transfer.broadcasted": Envelope<BroadcastedData>;
  "wallet.transfer.confirmed": Envelope<ConfirmedData>;
  "wallet.transfer.failed": Envelope<FailedData>;
  "service.ping": Envelope<PingData>;
} = {
  "wallet.transfer.broadcasted": {
    id: "evt_01JDX4R8B2C3D4E5F6G7H8J9KA",
    kind: "wallet.transfer.broadcasted",
    date: "2023-04-24T06:51:27.412Z",
    subscriptionId: SUBSCRIPTION_ID,
    data: payment,
  },
  "wallet.transfer.confirmed": {
    id: "evt_01JDX4T1M2N3P4Q5R6S7T8V9WX",
    kind: "wallet.transfer.confirmed",
    date: "2023-04-24T06:52:24.387Z",
    subscriptionId: SUBSCRIPTION_ID,
    data: { ...payment, solidifiedBlockNumber: 50568575 },
  },
  "wallet.transfer.failed": {
    id: "evt_01JDX4T1M2N3P4Q5R6S7T8V9WY",
    kind: "wallet.transfer.failed",
    date: "2023-04-24T06:52:24.391Z",
    subscriptionId: SUBSCRIPTION_ID,
    data: {
      ...payment,
      txId: "6f73eebee92e96fce4bb02098d3af588a14c86aeadd795477e9164c5177d87d6",
      logIndex: -1,
      fee: "2086320",
      reason: "REVERT",
      solidifiedBlockNumber: 50568575,
    },
  },
  "service.ping": {
    id: "evt_01JDX4V0A1B2C3D4E5F6G7H8J9",
    kind: "service.ping",
    date: "2026-11-24T03:30:00.000Z",
    subscriptionId: SUBSCRIPTION_ID,
    data: { message: "This is a test event from the TRON webhook service." },
  },
};

/** When each kind fires and what a receiver may rely on; the OpenAPI document and README say the same. */
export const EVENT_DESCRIPTIONS: Record<EventKind, { summary: string; when: string }> = {
  "wallet.transfer.broadcasted": {
    summary: "A transfer appeared in a new block (fast, provisional)",
    when:
      "A successful TRX, TRC-10 or TRC-20 transfer touching a watched address appears in a new block at the chain's head, " +
      "seconds after it was made. Provisional: a fork above the solidified head may still replace the block; the transfer " +
      "then ends as confirmed (re-included) or failed with reason dropped.",
  },
  "wallet.transfer.confirmed": {
    summary: "A transfer's block is solidified (final)",
    when:
      "The block holding a successful transfer is at or below the node's solidified head on the canonical chain (about a " +
      "minute after broadcasted on mainnet). Final: credit a deposit on this event. A subscription listing only this kind " +
      "gets it without broadcasted.",
  },
  "wallet.transfer.failed": {
    summary: "A transfer failed for good (final)",
    when:
      "The transaction is in a solidified block with a result other than SUCCESS (reason = java-tron's contractRet: REVERT, " +
      "OUT_OF_ENERGY, ...; from, to and amount are what it would have moved), or it was broadcasted in a block that a fork " +
      "replaced and the solidified chain passed its expiration without including it (reason dropped; blockNumber and " +
      "blockHash are the replaced block's). Final.",
  },
  "service.ping": {
    summary: "A test event",
    when: "Sent by POST /v1/subscriptions/{id}/test (its default kind), whatever the subscription's events and addresses.",
  },
};

export const GUARANTEES =
  "Finality: broadcasted is provisional; confirmed and failed are final and never contradict each other (a transfer " +
  "gets at most one of them). Ordering: none. Deliveries are independent and retried on their own schedule, so a " +
  "receiver may see confirmed before broadcasted. Identity: a transfer is (chainId, txId, logIndex, internalIndex), and " +
  "there is one event per (subscription, kind, transfer): re-reading a block, a restart or a fork never makes a second " +
  "one. Delivery is at least once: deduplicate deliveries on the webhook-id header (the event id, the same on every " +
  "attempt), and per transfer on the identity tuple together with the kind.";

/** A secret of the documentation only (whsec_ + base64 of 32 bytes), so anyone can check the example signatures. */
export const EXAMPLE_SECRET = "whsec_d9RxGn+p46iOrU1z8mbCHLmXuJQDV4G813GZQPE3iAA=";
const EXAMPLE_SENT_AT = new Date(EXAMPLE_PAYLOADS["wallet.transfer.confirmed"].date);

/** The delivery headers and what a receiver does with each (the deliverer sets them: deliverer/sign.ts). */
export const DELIVERY_HEADERS: Record<string, string> = {
  "webhook-id": "The event id (evt_...), the same on every attempt and retry of this event: deduplicate on it.",
  "webhook-timestamp":
    "Unix seconds when this attempt was signed. Reject a delivery whose timestamp is far from now (standardwebhooks allows 5 minutes).",
  "webhook-signature":
    "Standard Webhooks signature: v1,<base64 HMAC-SHA256 of \"<webhook-id>.<webhook-timestamp>.<body>\"> keyed with the " +
    "subscription's secret (the base64 after whsec_). During a secret rotation's grace period two signatures, " +
    "space-separated, new first: accept the delivery when any one verifies.",
  "x-subscription-id": "The subscription (sub_...) this delivery belongs to.",
  "user-agent": "Identifies the sender.",
};

/** An example delivery of `kind` exactly as the deliverer would send it, signed with EXAMPLE_SECRET. */
export function exampleDelivery(kind: EventKind): { headers: Record<string, string>; body: string } {
  const payload = EXAMPLE_PAYLOADS[kind];
  const body = renderPayload(payload);
  const headers = deliveryHeaders({
    eventId: payload.id,
    subscriptionId: payload.subscriptionId,
    secrets: [EXAMPLE_SECRET],
    body,
    at: EXAMPLE_SENT_AT,
  });
  return { headers, body };
}

/**
 * How a receiver verifies a delivery, in TypeScript with the standardwebhooks package (the README shows the same).
 * `verify` throws unless a signature matches and the timestamp is within 5 minutes; it returns the parsed payload.
 */
export const VERIFY_EXAMPLE = `import { Webhook } from "standardwebhooks";
const webhook = new Webhook(process.env.WEBHOOK_SECRET!); // whsec_... from the create or rotate response

export async function receive(req: Request): Promise<Response> {
  const body = await req.text(); // the raw bytes: parsing and re-serializing first would break the signature
  try { webhook.verify(body, Object.fromEntries(req.headers)); } catch { return new Response("bad signature", { status: 401 }); }
  const event = JSON.parse(body) as { id: string; kind: string }; // deduplicate on event.id (the webhook-id)
  console.log(event.kind, event.id);
  return new Response(null, { status: 204 });
}`;
