// Webhook payloads (docs/CONTRACT.md "Events and delivery": {id, kind, date, subscriptionId, data}) and the event view.
import { create } from "@bufbuild/protobuf";
import {
  EventViewSchema,
  type Activity,
  type Asset,
  type EventView,
  type MatchedAddress,
  type Permission,
  type Transfer,
} from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import {
  CONFIRMED,
  FAILED,
  familyOf,
  isActivityKind,
  isFinalKind,
  type ActivityFamily,
  type ActivityKind,
} from "../common/contract/index.ts";
import type { EventRow } from "./schema.ts";

export type Envelope = {
  id: string;
  kind: string;
  date: string;
  subscriptionId: string;
  data: Record<string, unknown>;
};

/** Where a chain event happened: the fields every transfer's and activity's data starts with. */
function placeFields(x: Transfer | Activity): Record<string, unknown> {
  return {
    chainId: x.chainId,
    blockNumber: Number(x.blockNumber),
    blockHash: x.blockHash,
    blockTimestamp: Number(x.blockTimestampMs),
    txId: x.txId,
    logIndex: x.logIndex,
  };
}

/** data.asset: the token moved, approved or frozen; symbol and decimals null when the matcher does not know it. */
function assetJson(a: Asset | undefined): Record<string, unknown> {
  return {
    type: a?.type ?? "native",
    standard: a?.standard ?? "TRX",
    contract: a?.contract ?? null,
    tokenId: a?.tokenId ?? null,
    symbol: a?.symbol ?? null,
    decimals: a?.decimals ?? null,
  };
}

function matchedJson(list: readonly MatchedAddress[]): Record<string, unknown>[] {
  return list.map((m) => ({ chainId: m.chainId, address: m.address, role: m.role }));
}

/**
 * `data` of a transfer event of `kind` (docs/CONTRACT.md "Transfer lifecycle": the final kinds carry more); `backfill`
 * is the job that made it, null for the live streams' events.
 */
export function transferData(t: Transfer, kind: string, backfill: string | null = null): Record<string, unknown> {
  const data: Record<string, unknown> = {
    ...placeFields(t),
    internalIndex: t.internalIndex,
    from: t.from,
    to: t.to,
    amount: t.amount,
    asset: assetJson(t.asset),
    fee: t.fee === "" ? "0" : t.fee,
    memo: t.memo ?? null,
    matchedAddresses: matchedJson(t.matchedAddresses),
    backfill,
  };
  if (kind === FAILED) data.reason = t.reason;
  if (kind === CONFIRMED || kind === FAILED) data.solidifiedBlockNumber = Number(t.solidifiedBlockNumber);
  return data;
}

/** An approval of at least 2^255 is "unlimited": wallets approve 2^256-1, and half of that is already no limit. */
const UNLIMITED_APPROVAL = 1n << 255n;

function permissionJson(p: Permission | undefined): Record<string, unknown> {
  return {
    threshold: Number(p?.threshold ?? 0n),
    keys: (p?.keys ?? []).map((k) => ({ address: k.address, weight: Number(k.weight) })),
  };
}

/** The family's own fields (docs/CONTRACT.md "Account activity"). */
function detailFields(detail: Activity["detail"]): Record<string, unknown> {
  switch (detail.case) {
    case "approval": {
      const a = detail.value;
      return { owner: a.owner, spender: a.spender, amount: a.amount, unlimited: BigInt(a.amount) >= UNLIMITED_APPROVAL, asset: assetJson(a.asset) };
    }
    case "permission": {
      const p = detail.value;
      return {
        address: p.address,
        owner: permissionJson(p.owner),
        witness: p.witness ? permissionJson(p.witness) : null,
        actives: p.actives.map((a) => {
          const { threshold, keys } = permissionJson(a);
          return { name: a.name, threshold, operations: a.operations, keys };
        }),
      };
    }
    case "resource": {
      const r = detail.value;
      const delegate = r.type === "delegate";
      return {
        type: r.type,
        owner: r.owner,
        resource: r.resource ?? null,
        amount: r.amount ?? null,
        receiver: r.receiver ?? null,
        lock: delegate ? (r.lock ?? false) : null,
        lockPeriod: delegate ? Number(r.lockPeriod ?? 0n) : null,
        votes: r.type === "vote" ? r.votes.map((v) => ({ address: v.address, count: Number(v.count) })) : null,
      };
    }
    case "blacklist": {
      const b = detail.value;
      return { type: b.type, address: b.address, amount: b.amount ?? null, asset: assetJson(b.asset) };
    }
    default:
      // Enqueue refuses an activity without its family's detail (deliverer/service.ts).
      throw new Error("activity without a detail");
  }
}

/**
 * `data` of an account activity event of `kind` (docs/CONTRACT.md "Account activity"): where it happened, the
 * family's fields, and what transfers carry besides; `.confirmed` adds the solidified head.
 */
export function activityData(a: Activity, kind: ActivityKind, backfill: string | null = null): Record<string, unknown> {
  const data: Record<string, unknown> = {
    ...placeFields(a),
    ...detailFields(a.detail),
    fee: a.fee === "" ? "0" : a.fee,
    matchedAddresses: matchedJson(a.matchedAddresses),
    backfill,
  };
  if (isFinalKind(kind)) data.solidifiedBlockNumber = Number(a.solidifiedBlockNumber);
  return data;
}

export function envelope(id: string, kind: string, subscriptionId: string, at: Date, data: Record<string, unknown>): Envelope {
  return { id, kind, date: at.toISOString(), subscriptionId, data };
}

const ENVELOPE_ORDER = ["id", "kind", "date", "subscriptionId", "data"];
const PLACE_ORDER = ["chainId", "blockNumber", "blockHash", "blockTimestamp", "txId", "logIndex"];
const TRANSFER_ORDER = [
  ...PLACE_ORDER, "internalIndex", "from", "to", "amount", "asset", "fee", "memo", "reason", "solidifiedBlockNumber",
  "matchedAddresses", "test",
];
const ACTIVITY_TAIL = ["fee", "solidifiedBlockNumber", "matchedAddresses", "backfill", "test"];
const ACTIVITY_ORDER: Record<ActivityFamily, readonly string[]> = {
  approval: [...PLACE_ORDER, "owner", "spender", "amount", "unlimited", "asset", ...ACTIVITY_TAIL],
  permission: [...PLACE_ORDER, "address", "owner", "witness", "actives", ...ACTIVITY_TAIL],
  resource: [...PLACE_ORDER, "type", "owner", "resource", "amount", "receiver", "lock", "lockPeriod", "votes", ...ACTIVITY_TAIL],
  blacklist: [...PLACE_ORDER, "type", "address", "amount", "asset", ...ACTIVITY_TAIL],
};
const ASSET_ORDER = ["type", "standard", "contract", "tokenId", "symbol", "decimals"];
const PERMISSION_ORDER = ["name", "threshold", "operations", "keys"];
const KEY_ORDER = ["address", "weight"];
const VOTE_ORDER = ["address", "count"];

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
  if (typeof p.kind === "string" && isActivityKind(p.kind)) {
    shaped = activityShaped(familyOf(p.kind), data);
  } else if ("txId" in data) {
    const asset = data.asset as Record<string, unknown> | null | undefined;
    shaped = asset ? ordered(data, TRANSFER_ORDER, "asset", ordered(asset, ASSET_ORDER)) : ordered(data, TRANSFER_ORDER);
  }
  return JSON.stringify(ordered(p, ENVELOPE_ORDER, "data", shaped));
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `list`'s objects each in `order` (anything else as it is). */
function orderedEach(list: unknown, order: readonly string[], inner?: (o: Record<string, unknown>) => Record<string, unknown>): unknown {
  if (!Array.isArray(list)) return list;
  return list.map((o) => (isRecord(o) ? ordered(inner ? inner(o) : o, order) : o));
}

/** An activity's data in its family's order, nested objects (asset, permissions, keys, votes) in theirs. */
function activityShaped(family: ActivityFamily, data: Record<string, unknown>): Record<string, unknown> {
  const out = ordered(data, ACTIVITY_ORDER[family]);
  if (isRecord(out.asset)) out.asset = ordered(out.asset, ASSET_ORDER);
  const permission = (o: Record<string, unknown>) => ({ ...o, keys: orderedEach(o.keys, KEY_ORDER) });
  if (family === "permission") {
    if (isRecord(out.owner)) out.owner = ordered(permission(out.owner), PERMISSION_ORDER);
    if (isRecord(out.witness)) out.witness = ordered(permission(out.witness), PERMISSION_ORDER);
    out.actives = orderedEach(out.actives, PERMISSION_ORDER, permission);
  }
  if (family === "resource") out.votes = orderedEach(out.votes, VOTE_ORDER);
  return out;
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
