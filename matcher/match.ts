// One block's transfers against the watch index: one lookup for every address the block touches, then one event of
// the kind being made per (subscription, transfer) with the roles the subscription's addresses played (both for a
// transfer from a watched address to itself). Disabled subscriptions, revoked keys and chains switched off are
// filtered by the index; subscriptions without the kind, and roles their match conditions reject
// (matcher/conditions.ts), are filtered here, so each kind reaches only those that list it, when the stream that
// emits it processes the block.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { AssetSchema, NewEventSchema, type Asset, type NewEvent } from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import { BROADCASTED, CONFIRMED, FAILED, type ChainId, type TransferKind } from "../common/contract/index.ts";
import type { Watcher } from "../common/watch-index/reader.ts";
import type { DecodedTransfer } from "./decode.ts";
import type { BlockContext } from "./block-context.ts";
import { activityAddresses, buildActivityEvents } from "./activity/events.ts";
import type { DecodedActivity } from "./activity/types.ts";
import { rolePasses } from "./conditions.ts";
import { knownToken } from "./tokens.ts";

/** What a confirmed or failed event adds: the solidified head when it is made, and for failed a forced reason. */
export interface Finality {
  solidifiedBlockNumber: number;
  /** `dropped` for a transfer a fork replaced; otherwise the reason is the transfer's own result (contractRet). */
  reason?: string;
}

export type { BlockContext } from "./block-context.ts";

/** What a block holds for matching: its transfers and its other account activity. */
export interface BlockMatter {
  transfers: readonly DecodedTransfer[];
  activities: readonly DecodedActivity[];
}

/** Answers: which of these base58 addresses are watched on this chain, and by which active watchers. */
export type WatchLookup = (chainId: ChainId, addresses: readonly string[]) => Promise<Map<string, Watcher[]>>;

export function assetOf(chainId: ChainId, t: DecodedTransfer): Asset {
  const init: MessageInitShape<typeof AssetSchema> =
    t.standard === "TRX"
      ? { type: "native", standard: "TRX", symbol: "TRX", decimals: 6 }
      : t.standard === "TRC10"
        ? { type: "fungible", standard: "TRC10", tokenId: t.tokenId ?? "" }
        : (() => {
            const token = t.contract ? knownToken(chainId, t.contract) : null;
            return {
              type: "fungible",
              standard: "TRC20",
              contract: t.contract ?? "",
              ...(token ? { symbol: token.symbol, decimals: token.decimals } : {}),
            };
          })();
  return create(AssetSchema, init);
}

/** Every address a block's transfers and activities touch, once each: one watch-index lookup covers them all. */
export function touchedAddresses(transfers: readonly DecodedTransfer[], activities: readonly DecodedActivity[] = []): string[] {
  const set = new Set<string>();
  for (const t of transfers) {
    set.add(t.from);
    set.add(t.to);
  }
  activityAddresses(activities, set);
  return [...set];
}

/** The events of `kind` a block's transfers make, given the watchers of their addresses. Pure: no I/O. */
export function buildEvents(
  block: BlockContext,
  transfers: readonly DecodedTransfer[],
  watched: Map<string, Watcher[]>,
  kind: TransferKind,
  finality?: Finality,
): NewEvent[] {
  if (watched.size === 0) return [];
  const events: NewEvent[] = [];
  for (const t of transfers) {
    const fromWatchers = watched.get(t.from);
    const toWatchers = watched.get(t.to);
    if (!fromWatchers && !toWatchers) continue;
    // subscription id -> roles, in from/to order
    const roles = new Map<string, ("from" | "to")[]>();
    for (const [list, role] of [
      [fromWatchers, "from"],
      [toWatchers, "to"],
    ] as const) {
      for (const w of list ?? []) {
        if (!w.active || !w.events.includes(kind) || !rolePasses(w.match, t, role)) continue;
        const r = roles.get(w.subscriptionId);
        if (!r) roles.set(w.subscriptionId, [role]);
        else if (!r.includes(role)) r.push(role);
      }
    }
    if (roles.size === 0) continue;
    const asset = assetOf(block.chainId, t);
    for (const [subscriptionId, rs] of roles) {
      events.push(
        create(NewEventSchema, {
          subscriptionId,
          kind,
          transfer: {
            chainId: block.chainId,
            blockNumber: BigInt(block.number),
            blockHash: block.blockId,
            blockTimestampMs: BigInt(block.timestampMs),
            txId: t.txId,
            logIndex: t.logIndex,
            internalIndex: t.internalIndex,
            from: t.from,
            to: t.to,
            amount: t.amount,
            asset,
            fee: t.fee,
            memo: t.memo ?? undefined,
            matchedAddresses: rs.map((role) => ({ chainId: block.chainId, address: role === "from" ? t.from : t.to, role })),
            ...(kind === FAILED ? { reason: finality?.reason ?? t.result } : {}),
            ...(finality ? { solidifiedBlockNumber: BigInt(finality.solidifiedBlockNumber) } : {}),
          },
        }),
      );
    }
  }
  return events;
}

/** Whether a transfer's transaction succeeded (java-tron's contractRet). */
export function succeeded(t: DecodedTransfer): boolean {
  return t.result === "SUCCESS";
}

/**
 * The head stream's events of a block: lookup (one round trip) plus the broadcasted events of its successful
 * transfers and of its activities (the decoder keeps only successful ones).
 */
export async function matchBroadcasted(block: BlockContext, matter: BlockMatter, lookup: WatchLookup): Promise<NewEvent[]> {
  const ok = matter.transfers.filter(succeeded);
  if (ok.length === 0 && matter.activities.length === 0) return [];
  const watched = await lookup(block.chainId, touchedAddresses(ok, matter.activities));
  return [...buildEvents(block, ok, watched, BROADCASTED), ...buildActivityEvents(block, matter.activities, watched, { phase: "broadcasted" })];
}

/**
 * The solidified stream's events of a block (one lookup): `confirmed` for its successful transfers, `failed` with
 * the transaction's contractRet for the rest, an activity's `.confirmed`; `finality.reason` forces the reason
 * (`dropped`) and makes transfers' events only: a dropped activity gets no final event.
 */
export async function matchFinal(block: BlockContext, matter: BlockMatter, lookup: WatchLookup, finality: Finality): Promise<NewEvent[]> {
  const { transfers } = matter;
  const activities = finality.reason === undefined ? matter.activities : [];
  if (transfers.length === 0 && activities.length === 0) return [];
  const watched = await lookup(block.chainId, touchedAddresses(transfers, activities));
  if (watched.size === 0) return [];
  if (finality.reason !== undefined) return buildEvents(block, transfers, watched, FAILED, finality);
  const ok: DecodedTransfer[] = [];
  const failed: DecodedTransfer[] = [];
  for (const t of transfers) (succeeded(t) ? ok : failed).push(t);
  return [
    ...buildEvents(block, ok, watched, CONFIRMED, finality),
    ...buildEvents(block, failed, watched, FAILED, finality),
    ...buildActivityEvents(block, activities, watched, { phase: "confirmed", solidifiedBlockNumber: finality.solidifiedBlockNumber }),
  ];
}
