// The pieces of the OpenAPI document's examples, which each operation (gateway/routes/) puts together into a real
// request body and the success answer to it, so the docs page shows (and "try it out" sends) real values instead of
// generated placeholders. Addresses are real mainnet ones; the payloads are the event catalog's.
import { CONFIRMED, TRANSFER_KINDS } from "../common/contract/index.ts";
import { EXAMPLE_PAYLOADS } from "./event-catalog.ts";
import { SubscriptionSchema } from "./schemas.ts";

const SUB = "sub_01JDX4Q3ZK7M2N8P5R6S9T0V1W";
const CREATED = "2026-11-22T02:26:03.123Z";
export const WALLET = { chainId: "tron:mainnet", address: "TPcUx2iwjomVzmX3CHDDYmnEPJFTVeyqqS" };
export const OTHER = { chainId: "tron:mainnet", address: "TXCvUayMx6AuBvS7qBa79ZAfhrwSA7vTjG" };
const SECRET = "whsec_d9RxGn+p46iOrU1z8mbCHLmXuJQDV4G813GZQPE3iAA=";

// The default match conditions, shown where the subscription representation carries them.
const MATCH =
  "match" in SubscriptionSchema.properties ? { match: { assets: null, directions: ["incoming", "outgoing"], includeZeroValue: false } } : {};

/** When the examples of a change happened. */
export const UPDATED = "2026-11-22T03:10:44.902Z";

export const CREATE_BODY = {
  destination: { type: "https", url: "https://example.com/hooks" },
  events: TRANSFER_KINDS,
  description: "Deposits to the hot wallet",
};

export function exampleSubscription(opts: { secret?: boolean; addresses?: (typeof WALLET)[]; hasMore?: boolean; updated?: string } = {}) {
  return {
    id: SUB,
    destination: { ...CREATE_BODY.destination, ...(opts.secret ? { secret: SECRET } : {}) },
    events: TRANSFER_KINDS,
    ...MATCH,
    filters: { addresses: opts.addresses ?? [], ...(opts.hasMore === undefined ? {} : { hasMore: opts.hasMore }) },
    status: "enabled",
    description: CREATE_BODY.description,
    dateCreated: CREATED,
    dateUpdated: opts.updated ?? CREATED,
  };
}

export function exampleEventView(kind: keyof typeof EXAMPLE_PAYLOADS, status: "pending" | "delivered", test = false) {
  const original = EXAMPLE_PAYLOADS[kind];
  const payload = test ? { ...original, data: { ...original.data, test: true } } : original;
  const delivered = status === "delivered";
  return {
    id: payload.id,
    subscriptionId: SUB,
    kind,
    chainId: "chainId" in payload.data ? payload.data.chainId : null,
    status,
    attempts: delivered ? 1 : 0,
    deliveryCount: delivered ? 1 : 0,
    responseStatus: delivered ? 204 : null,
    responseBody: delivered ? "" : null,
    heldReason: null,
    payload,
    dateCreated: payload.date,
  };
}

export const BACKFILL_ID = "bf_01JDX5A7C3D4E5F6G7H8J9KMNP";

/** A backfill job as the API shows it (gateway/routes/backfills/). */
export function exampleBackfill(status: "queued" | "running" | "canceled", scanned: number, created: number) {
  return {
    id: BACKFILL_ID,
    subscriptionId: SUB,
    chainId: "tron:mainnet",
    status,
    fromBlock: 50_540_000,
    toBlock: 50_568_799,
    addresses: 2,
    progress: { blocksScanned: scanned, blocksTotal: 28_800, eventsCreated: created, eventsSkipped: created === 0 ? 0 : 4 },
    error: null,
    dateCreated: "2026-11-22T03:00:00.000Z",
    dateStarted: status === "queued" ? null : "2026-11-22T03:00:00.412Z",
    dateFinished: status === "canceled" ? "2026-11-22T03:02:10.118Z" : null,
  };
}

/** Path, header and query parameters by name. */
export const PARAMETER_EXAMPLES: Record<string, string> = {
  id: SUB,
  backfillId: BACKFILL_ID,
  eventId: EXAMPLE_PAYLOADS[CONFIRMED].id,
  "idempotency-key": "create-hot-wallet-hooks-1",
};
