// One block's activities against the watchers of their addresses (the same lookup as its transfers): one event of
// the kind being made per (subscription, activity) with the roles its addresses played. Match conditions are the
// transfers' (docs/CONTRACT.md "Account activity"): a subscription that lists the kind gets every activity of it.
import { create } from "@bufbuild/protobuf";
import { ActivitySchema, NewEventSchema, type NewEvent } from "../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { activityKinds, type ActivityRole } from "../../common/contract/index.ts";
import type { Watcher } from "../../common/watch-index/reader.ts";
import type { BlockContext } from "../block-context.ts";
import { knownToken } from "../tokens.ts";
import type { ActivityDetail, DecodedActivity } from "./types.ts";

/** The head stream's phase (`.broadcasted`) or the solidified stream's (`.confirmed`, with the solidified head). */
export type ActivityPhase = { phase: "broadcasted" } | { phase: "confirmed"; solidifiedBlockNumber: number };

/** Every address an activity touches. */
export function activityAddresses(activities: readonly DecodedActivity[], into: Set<string>): void {
  for (const a of activities) for (const p of a.parties) into.add(p.address);
}

/** The token of an approval or a blacklist event with its symbol and decimals where the chain's table knows it. */
function withToken(block: BlockContext, detail: ActivityDetail): ActivityDetail {
  if (detail.case !== "approval" && detail.case !== "blacklist") return detail;
  const asset = detail.value.asset;
  const token = asset?.contract ? knownToken(block.chainId, asset.contract) : null;
  if (!token) return detail;
  return { ...detail, value: { ...detail.value, asset: { ...asset, symbol: token.symbol, decimals: token.decimals } } } as ActivityDetail;
}

/** The events of one phase a block's activities make, given the watchers of their addresses. Pure: no I/O. */
export function buildActivityEvents(
  block: BlockContext,
  activities: readonly DecodedActivity[],
  watched: Map<string, Watcher[]>,
  at: ActivityPhase,
): NewEvent[] {
  if (watched.size === 0 || activities.length === 0) return [];
  const events: NewEvent[] = [];
  for (const a of activities) {
    const kind = activityKinds(a.family)[at.phase];
    // subscription id -> its (address, role) pairs, in the activity's order
    const matched = new Map<string, { address: string; role: ActivityRole }[]>();
    for (const p of a.parties) {
      for (const w of watched.get(p.address) ?? []) {
        if (!w.active || !w.events.includes(kind)) continue;
        const list = matched.get(w.subscriptionId);
        if (!list) matched.set(w.subscriptionId, [p]);
        else if (!list.some((q) => q.address === p.address && q.role === p.role)) list.push(p);
      }
    }
    if (matched.size === 0) continue;
    const detail = withToken(block, a.detail);
    for (const [subscriptionId, parties] of matched) {
      events.push(
        create(NewEventSchema, {
          subscriptionId,
          kind,
          activity: create(ActivitySchema, {
            chainId: block.chainId,
            blockNumber: BigInt(block.number),
            blockHash: block.blockId,
            blockTimestampMs: BigInt(block.timestampMs),
            txId: a.txId,
            logIndex: a.logIndex,
            fee: a.fee,
            matchedAddresses: parties.map((p) => ({ chainId: block.chainId, address: p.address, role: p.role })),
            ...(at.phase === "confirmed" ? { solidifiedBlockNumber: BigInt(at.solidifiedBlockNumber) } : {}),
            detail,
          }),
        }),
      );
    }
  }
  return events;
}
