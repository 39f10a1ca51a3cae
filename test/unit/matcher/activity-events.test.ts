// Activity events from decoded activities and the watchers of their addresses (matcher/activity/events.ts): the kind
// of the phase, one event per subscription with every role its addresses played, inactive watchers and subscriptions
// without the kind left out, the token's symbol filled in, and a dropped block's activities making nothing.
import { describe, expect, test } from "bun:test";
import { defaultMatch } from "../../../common/match-conditions.ts";
import type { Watcher } from "../../../common/watch-index/reader.ts";
import { buildActivityEvents } from "../../../matcher/activity/events.ts";
import type { DecodedActivity } from "../../../matcher/activity/types.ts";
import { matchFinal, type BlockContext } from "../../../matcher/match.ts";

const OWNER = "TPcUx2iwc5ny7c5gM5TWgFjX8RJQkZqMkD";
const SPENDER = "TW3NSuhT68vXKdamU7Rkq6sfEVCFwoDfGb";
const USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const block: BlockContext = { chainId: "tron:mainnet", number: 70_000_010, blockId: "00".repeat(32), timestampMs: 1_714_038_858_000 };

function watcher(subscriptionId: string, events: string[], active = true): Watcher {
  return { subscriptionId, keyId: "key_1", active, events, match: defaultMatch() };
}

const approval: DecodedActivity = {
  family: "approval",
  txId: "ab".repeat(32),
  logIndex: 2,
  parties: [
    { address: OWNER, role: "owner" },
    { address: SPENDER, role: "spender" },
  ],
  detail: { case: "approval", value: { owner: OWNER, spender: SPENDER, amount: "0", asset: { type: "fungible", standard: "TRC20", contract: USDT } } },
  fee: "345000",
  result: "SUCCESS",
};

describe("buildActivityEvents", () => {
  test("one event per subscription with every role it watched, of the phase's kind", () => {
    const watched = new Map([
      [OWNER, [watcher("sub_a", ["wallet.approval.broadcasted"]), watcher("sub_b", ["wallet.approval.confirmed"])]],
      [SPENDER, [watcher("sub_a", ["wallet.approval.broadcasted"]), watcher("sub_c", ["wallet.approval.broadcasted"], false)]],
    ]);
    const events = buildActivityEvents(block, [approval], watched, { phase: "broadcasted" });
    expect(events.map((e) => [e.subscriptionId, e.kind])).toEqual([["sub_a", "wallet.approval.broadcasted"]]);
    const a = events[0]!.activity!;
    expect(a.matchedAddresses.map((m) => [m.address, m.role])).toEqual([
      [OWNER, "owner"],
      [SPENDER, "spender"],
    ]);
    expect([a.txId, a.logIndex, a.fee, a.solidifiedBlockNumber]).toEqual([approval.txId, 2, "345000", 0n]);
    expect(a.detail.case).toBe("approval");
    // USDT is in the mainnet table: the asset gets its symbol and decimals.
    if (a.detail.case === "approval") expect([a.detail.value.asset?.symbol, a.detail.value.asset?.decimals, a.detail.value.amount]).toEqual(["USDT", 6, "0"]);
  });

  test("the confirmed phase carries the solidified head; a subscription without the kind gets nothing", () => {
    const watched = new Map([[OWNER, [watcher("sub_a", ["wallet.approval.broadcasted"]), watcher("sub_b", ["wallet.approval.confirmed"])]]]);
    const events = buildActivityEvents(block, [approval], watched, { phase: "confirmed", solidifiedBlockNumber: 70_000_029 });
    expect(events.map((e) => [e.subscriptionId, e.kind, e.activity!.solidifiedBlockNumber])).toEqual([["sub_b", "wallet.approval.confirmed", 70_000_029n]]);
  });

  test("matchFinal: a dropped block's activities make no event, its transfers still do", async () => {
    const lookup = async () => new Map([[OWNER, [watcher("sub_b", ["wallet.approval.confirmed"])]]]);
    const kept = await matchFinal(block, { transfers: [], activities: [approval] }, lookup, { solidifiedBlockNumber: 70_000_029 });
    expect(kept.map((e) => e.kind)).toEqual(["wallet.approval.confirmed"]);
    const dropped = await matchFinal(block, { transfers: [], activities: [approval] }, lookup, { solidifiedBlockNumber: 70_000_029, reason: "dropped" });
    expect(dropped).toEqual([]);
  });
});
