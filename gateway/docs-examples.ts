// Examples of the OpenAPI document, per operation: a real request body and the success answer to it, so the docs
// page shows (and "try it out" sends) real values instead of generated placeholders. Addresses are real mainnet
// ones; the payloads are the event catalog's.
import { EXAMPLE_PAYLOADS } from "./event-catalog.ts";
import { SubscriptionSchema } from "./schemas.ts";

const SUB = "sub_01JDX4Q3ZK7M2N8P5R6S9T0V1W";
const CREATED = "2026-11-22T02:26:03.123Z";
const WALLET = { chainId: "tron:mainnet", address: "TPcUx2iwjomVzmX3CHDDYmnEPJFTVeyqqS" };
const OTHER = { chainId: "tron:mainnet", address: "TXCvUayMx6AuBvS7qBa79ZAfhrwSA7vTjG" };
const EVENTS = ["wallet.transfer.broadcasted", "wallet.transfer.confirmed", "wallet.transfer.failed"];
const SECRET = "whsec_d9RxGn+p46iOrU1z8mbCHLmXuJQDV4G813GZQPE3iAA=";

// The default match conditions, shown where the subscription representation carries them.
const MATCH =
  "match" in SubscriptionSchema.properties ? { match: { assets: null, directions: ["incoming", "outgoing"], includeZeroValue: false } } : {};

const createBody = {
  destination: { type: "https", url: "https://example.com/hooks" },
  events: EVENTS,
  description: "Deposits to the hot wallet",
};

function subscription(opts: { secret?: boolean; addresses?: (typeof WALLET)[]; hasMore?: boolean; updated?: string } = {}) {
  return {
    id: SUB,
    destination: { ...createBody.destination, ...(opts.secret ? { secret: SECRET } : {}) },
    events: EVENTS,
    ...MATCH,
    filters: { addresses: opts.addresses ?? [], ...(opts.hasMore === undefined ? {} : { hasMore: opts.hasMore }) },
    status: "enabled",
    description: createBody.description,
    dateCreated: CREATED,
    dateUpdated: opts.updated ?? CREATED,
  };
}

function eventView(kind: keyof typeof EXAMPLE_PAYLOADS, status: "pending" | "delivered", test = false) {
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

const BACKFILL_ID = "bf_01JDX5A7C3D4E5F6G7H8J9KMNP";

function backfill(status: "queued" | "running" | "canceled", scanned: number, created: number) {
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
  eventId: EXAMPLE_PAYLOADS["wallet.transfer.confirmed"].id,
  "idempotency-key": "create-hot-wallet-hooks-1",
};

export interface OperationExamples {
  request?: unknown;
  /** The success answer, by status. */
  response?: Record<string, unknown>;
}

export const OPERATION_EXAMPLES: Record<string, OperationExamples> = {
  "post /v1/subscriptions": { request: createBody, response: { "201": subscription({ secret: true, hasMore: false }) } },
  "get /v1/subscriptions": { response: { "200": { items: [subscription({ addresses: [] })] } } },
  "get /v1/subscriptions/{id}": { response: { "200": subscription({ addresses: [WALLET], hasMore: false }) } },
  "put /v1/subscriptions/{id}": {
    request: { ...createBody, status: "enabled" },
    response: { "200": subscription({ updated: "2026-11-22T03:10:44.902Z" }) },
  },
  "post /v1/subscriptions/{id}/secrets/rotate": {
    request: { gracePeriodSeconds: 3600 },
    response: { "200": subscription({ secret: true, addresses: [WALLET], hasMore: false, updated: "2026-11-22T03:10:44.902Z" }) },
  },
  "patch /v1/subscriptions/{id}/filters/addresses": {
    request: { add: [WALLET], remove: [OTHER] },
    response: {
      "200": {
        subscription: subscription({ addresses: [WALLET], hasMore: false, updated: "2026-11-22T03:10:44.902Z" }),
        results: {
          added: [WALLET],
          removed: [],
          skipped: [{ input: OTHER, reason: "not_found", detail: "This entry is not in the subscription's list." }],
        },
      },
    },
  },
  "put /v1/subscriptions/{id}/filters/addresses": {
    request: [WALLET, OTHER],
    response: { "200": subscription({ addresses: [WALLET, OTHER], hasMore: false, updated: "2026-11-22T03:10:44.902Z" }) },
  },
  "get /v1/subscriptions/{id}/filters/addresses": { response: { "200": { items: [WALLET, OTHER], nextPageToken: null } } },
  "post /v1/subscriptions/{id}/test": {
    request: { kind: "wallet.transfer.broadcasted" },
    response: { "200": eventView("wallet.transfer.broadcasted", "pending", true) },
  },
  "get /v1/subscriptions/{id}/events": {
    response: { "200": { items: [eventView("wallet.transfer.confirmed", "delivered"), eventView("wallet.transfer.broadcasted", "delivered")] } },
  },
  "get /v1/subscriptions/{id}/events/{eventId}": { response: { "200": eventView("wallet.transfer.confirmed", "delivered") } },
  "post /v1/subscriptions/{id}/events/{eventId}/retry": { response: { "200": eventView("wallet.transfer.confirmed", "pending") } },
  "get /v1/subscriptions/{id}/events/{eventId}/attempts": {
    response: {
      "200": {
        items: [
          { id: "att_01JDX4R8B2C3D4E5F6G7H8J9K0", date: "2026-11-22T02:27:04.410Z", durationMs: 212, responseStatus: 204, responseBody: "", error: null, trigger: "manual" },
          { id: "att_01JDX4Q4A1B2C3D4E5F6G7H8J9", date: "2026-11-22T02:26:03.150Z", durationMs: 15000, responseStatus: null, responseBody: null, error: "timeout: no complete response within 15000 ms", trigger: "automatic" },
        ],
      },
    },
  },
  "post /v1/subscriptions/{id}/events/recover": {
    request: { since: "2026-11-22T01:00:00.000Z", status: "failed" },
    response: { "202": { recovered: 1250 } },
  },
  "post /v1/subscriptions/{id}/backfills": {
    request: { chainId: "tron:mainnet", since: "2026-11-21T03:00:00.000Z", addresses: [WALLET.address, OTHER.address] },
    response: { "202": backfill("queued", 0, 0) },
  },
  "get /v1/subscriptions/{id}/backfills": { response: { "200": { items: [backfill("running", 12_400, 316)] } } },
  "get /v1/subscriptions/{id}/backfills/{backfillId}": { response: { "200": backfill("running", 12_400, 316) } },
  "post /v1/subscriptions/{id}/backfills/{backfillId}/cancel": { response: { "200": backfill("canceled", 20_100, 512) } },
  "get /v1/events": {
    response: { "200": { items: [eventView("wallet.transfer.confirmed", "delivered"), eventView("wallet.transfer.broadcasted", "delivered")] } },
  },
  "get /v1/subscriptions/{id}/health": {
    response: {
      "200": {
        lastHour: { attempts: 120, succeeded: 118, successRate: 0.9833 },
        last24Hours: { attempts: 2880, succeeded: 2851, successRate: 0.9899 },
        lastSuccess: "2026-11-22T02:26:03.123Z",
        lastFailure: { date: "2026-11-22T02:11:40.508Z", reason: "HTTP 503" },
        consecutiveFailures: 0,
        durationMs: { p50: 184, p99: 912 },
        pending: 3,
        hourlySuccessRate: [1, 1, 1, 0.99, 1, 1, 1, 1, 0.98, 1, 1, 1, 1, 1, null, 1, 1, 0.97, 1, 1, 1, 1, 1, 0.98],
      },
    },
  },
};
