// The event list's one-line summary of each kind (console/event-summary.ts), on the catalog's examples: amounts in
// whole tokens exactly, the asset by its symbol (or contract, or base units when its decimals are unknown).
import { describe, expect, test } from "bun:test";
import { eventSummary, formatUnits } from "../../../console/event-summary.ts";
import { EXAMPLE_PAYLOADS } from "../../../gateway/event-catalog.ts";
import type { EventView } from "../../../console/api.ts";

const summary = (p: unknown) => eventSummary(p as EventView["payload"]);

describe("eventSummary", () => {
  test("each kind's main fields", () => {
    const shown = Object.fromEntries(Object.entries(EXAMPLE_PAYLOADS).map(([kind, p]) => [kind, summary(p)]));
    expect(shown).toEqual({
      "wallet.transfer.broadcasted": "6.868769 USDT",
      "wallet.transfer.confirmed": "6.868769 USDT",
      "wallet.transfer.failed": "6.868769 USDT (REVERT)",
      "wallet.approval.broadcasted": "unlimited USDT",
      "wallet.approval.confirmed": "unlimited USDT",
      "wallet.permission.broadcasted": "permission update: owner 2 of 2 keys",
      "wallet.permission.confirmed": "permission update: owner 2 of 2 keys",
      "wallet.resource.broadcasted": "delegate ENERGY 5,126 TRX",
      "wallet.resource.confirmed": "delegate ENERGY 5,126 TRX",
      "wallet.blacklist.broadcasted": "added USDT",
      "wallet.blacklist.confirmed": "added USDT",
      "service.ping": "",
    });
  });

  test("a revocation, an unknown token, a vote, a destruction of funds", () => {
    const approval = EXAMPLE_PAYLOADS["wallet.approval.broadcasted"];
    expect(summary({ ...approval, data: { ...approval.data, amount: "0", unlimited: false } })).toBe("0 USDT (revoked)");
    const unknown = { type: "fungible", standard: "TRC20", contract: "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf", tokenId: null, symbol: null, decimals: null };
    expect(summary({ ...approval, data: { ...approval.data, amount: "2500", unlimited: false, asset: unknown } }))
      .toBe("2500 base units of TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf");
    const resource = EXAMPLE_PAYLOADS["wallet.resource.broadcasted"];
    expect(summary({ ...resource, data: { ...resource.data, type: "vote", resource: null, amount: null, votes: [] } })).toBe("vote");
    expect(summary({ ...resource, data: { ...resource.data, type: "withdraw_rewards", resource: null, amount: "1843021" } })).toBe("withdraw_rewards 1.843021 TRX");
    const blacklist = EXAMPLE_PAYLOADS["wallet.blacklist.broadcasted"];
    expect(summary({ ...blacklist, data: { ...blacklist.data, type: "funds_destroyed", amount: "1500000000" } })).toBe("funds_destroyed 1,500 USDT");
  });
});

describe("formatUnits", () => {
  test("exact beyond 2^53, trailing zeros dropped, small amounts padded", () => {
    expect(formatUnits("6868769", 6)).toBe("6.868769");
    expect(formatUnits("5126000000", 6)).toBe("5,126");
    expect(formatUnits("1", 18)).toBe("0.000000000000000001");
    expect(formatUnits("123456789012345678901234567", 18)).toBe("123,456,789.012345678901234567");
    expect(formatUnits("0", 6)).toBe("0");
    expect(formatUnits("4200", 0)).toBe("4,200");
  });
});
