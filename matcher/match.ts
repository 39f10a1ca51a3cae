// One block's transfers against the watch index: one lookup for every address the block touches, then one
// `wallet.transfer.broadcasted` event per (subscription, transfer) with the roles the subscription's addresses
// played (both for a transfer from a watched address to itself). Disabled subscriptions, revoked keys and chains
// switched off are filtered by the index; subscriptions without the kind are filtered here.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { AssetSchema, NewEventSchema, type Asset, type NewEvent } from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import type { ChainId } from "../common/config.ts";
import type { Watcher } from "../common/watch-index.ts";
import type { DecodedTransfer } from "./decode.ts";
import { knownToken } from "./tokens.ts";

export const TRANSFER_KIND = "wallet.transfer.broadcasted";

export interface BlockContext {
  chainId: ChainId;
  number: number;
  blockId: string;
  timestampMs: number;
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

/** Every address a block's transfers touch, once each. */
export function touchedAddresses(transfers: readonly DecodedTransfer[]): string[] {
  const set = new Set<string>();
  for (const t of transfers) {
    set.add(t.from);
    set.add(t.to);
  }
  return [...set];
}

/** The events a block makes, given the watchers of its addresses. Pure: no I/O. */
export function buildEvents(block: BlockContext, transfers: readonly DecodedTransfer[], watched: Map<string, Watcher[]>): NewEvent[] {
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
        if (!w.active || !w.events.includes(TRANSFER_KIND)) continue;
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
          kind: TRANSFER_KIND,
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
          },
        }),
      );
    }
  }
  return events;
}

/** Lookup (one round trip) plus buildEvents. */
export async function matchBlock(block: BlockContext, transfers: readonly DecodedTransfer[], lookup: WatchLookup): Promise<NewEvent[]> {
  if (transfers.length === 0) return [];
  const watched = await lookup(block.chainId, touchedAddresses(transfers));
  return buildEvents(block, transfers, watched);
}
