// TRC-20 Approval logs: encoded by tronweb's ABI coder (the oracle), decoded back by the matcher, in both forms.
import { describe, expect, test } from "bun:test";
import { APPROVAL_TOPIC } from "../../../../matcher/activity/approval.ts";
import { decodeActivities } from "../../../../matcher/activity/decode.ts";
import type { DecodedActivity } from "../../../../matcher/activity/types.ts";
import type { TronLog } from "../../../../common/tron-node/types.ts";
import { FORMS, address, block, call, eventLog, info, utils, type Form } from "../../../support/tron-json.ts";

const opts = { chainId: "tron:mainnet" as const, blacklistContracts: new Set<string>() };
const USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const owner = address(1);
const spender = address(2);
const token = address(3); // no well-known token

const SIGNATURE = "Approval(address,address,uint256)";

function approval(contract: string, form: Form, value: bigint, from = owner, to = spender): TronLog {
  return eventLog(contract, form, SIGNATURE, [
    { type: "address", value: from, indexed: true },
    { type: "address", value: to, indexed: true },
    { type: "uint256", value },
  ]);
}

/** One call whose info holds these logs; the activities decoded. */
function decode(logs: TronLog[], form: Form, extra: { contractRet?: string; receipt?: string; failed?: boolean } = {}) {
  const t = call(owner, USDT, form, { contractRet: extra.contractRet });
  const i = info(t, { log: logs, fee: 27_255_900, receipt: { result: extra.receipt ?? "SUCCESS" }, ...(extra.failed ? { result: "FAILED" } : {}) });
  return { tx: t, activities: decodeActivities(block([t]), [i], opts) };
}

describe("wallet.approval: Approval(owner, spender, value) logs", () => {
  test("topic0 is keccak256 of the signature (8c5be1e5…)", () => {
    expect(APPROVAL_TOPIC).toBe(utils.ethersUtils.keccak256(utils.ethersUtils.toUtf8Bytes(SIGNATURE)).slice(2));
    expect(APPROVAL_TOPIC).toBe("8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925");
  });

  for (const form of FORMS) {
    test(`${form}: owner, spender, amount and the token; logIndex is the log's index; fee from the info`, () => {
      const { tx, activities } = decode([approval(USDT, form, 1_000_000n), approval(token, form, 5n)], form);
      const expected = (logIndex: number, amount: string, asset: object): DecodedActivity => ({
        family: "approval",
        txId: tx.txID,
        logIndex,
        parties: [
          { address: owner, role: "owner" },
          { address: spender, role: "spender" },
        ],
        detail: { case: "approval", value: { owner, spender, amount, asset } },
        fee: "27255900",
        result: "SUCCESS",
      });
      expect(activities).toEqual([
        expected(0, "1000000", { type: "fungible", standard: "TRC20", contract: USDT, symbol: "USDT", decimals: 6 }),
        expected(1, "5", { type: "fungible", standard: "TRC20", contract: token }),
      ]);
    });

    test(`${form}: an approval of 0 (a revocation) is kept; 2^256 − 1 and 2^255 round-trip as decimal strings`, () => {
      const amounts = [0n, 2n ** 255n, 2n ** 256n - 1n];
      const { activities } = decode(amounts.map((a) => approval(USDT, form, a)), form);
      expect(activities.map((a) => (a.detail.value as { amount: string }).amount)).toEqual(amounts.map(String));
    });

    test(`${form}: a TRC-721 approval (4 topics: the token id indexed) and other events are skipped; indexes stay the log array's`, () => {
      const nft = eventLog(token, form, SIGNATURE, [
        { type: "address", value: owner, indexed: true },
        { type: "address", value: spender, indexed: true },
        { type: "uint256", value: 7n, indexed: true },
      ]);
      const transfer = eventLog(USDT, form, "Transfer(address,address,uint256)", [
        { type: "address", value: owner, indexed: true },
        { type: "address", value: spender, indexed: true },
        { type: "uint256", value: 1n },
      ]);
      const { activities } = decode([nft, transfer, approval(USDT, form, 9n)], form);
      expect(activities.map((a) => a.logIndex)).toEqual([2]);
    });
  }

  test("a failed call gives nothing (contractRet, receipt or info result)", () => {
    const log = approval(USDT, "hex", 1n);
    expect(decode([log], "hex", { contractRet: "REVERT" }).activities).toEqual([]);
    expect(decode([log], "hex", { receipt: "OUT_OF_ENERGY" }).activities).toEqual([]);
    expect(decode([log], "hex", { failed: true }).activities).toEqual([]);
    expect(decode([log], "hex").activities).toHaveLength(1);
  });

  test("a topic printed with 0x and upper-case digits still matches; a log that does not decode is skipped", () => {
    const log = approval(USDT, "visible", 1n);
    const shouting = { ...log, topics: [`0x${log.topics![0]!.toUpperCase()}`, ...log.topics!.slice(1)] };
    const short = { ...log, data: "" };
    const dirty = { ...log, topics: [log.topics![0]!, `ff${log.topics![1]!.slice(2)}`, log.topics![2]!] };
    expect(decode([shouting, short, dirty], "visible").activities.map((a) => a.logIndex)).toEqual([0]);
  });

  test("an owner approving itself plays both roles", () => {
    const { activities } = decode([approval(USDT, "hex", 1n, owner, owner)], "hex");
    expect(activities[0]!.parties).toEqual([
      { address: owner, role: "owner" },
      { address: owner, role: "spender" },
    ]);
  });
});
