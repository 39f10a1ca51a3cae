// Blacklist events of the issuers in BLACKLIST_CONTRACTS: encoded by tronweb's ABI coder, decoded back. USDT on TRON
// puts the user in the data (nothing indexed); other issuers index it: both decode.
import { describe, expect, test } from "bun:test";
import { decodeActivities } from "../../../../matcher/activity/decode.ts";
import type { TronLog } from "../../../../common/tron-node/types.ts";
import { FORMS, address, block, call, eventLog, info, type EventArg, type Form } from "../../../support/tron-json.ts";

const USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const other = address(9);
const opts = { chainId: "tron:mainnet" as const, blacklistContracts: new Set([USDT]) };
const user = address(1);
const issuer = address(2);

const EVENTS = [
  ["AddedBlackList(address)", "added"],
  ["RemovedBlackList(address)", "removed"],
  ["DestroyedBlackFunds(address,uint256)", "funds_destroyed"],
] as const;

function log(contract: string, form: Form, signature: string, indexed: boolean, balance = 0n): TronLog {
  const args: EventArg[] = [{ type: "address", value: user, indexed }];
  if (signature.startsWith("Destroyed")) args.push({ type: "uint256", value: balance, indexed: false });
  return eventLog(contract, form, signature, args);
}

function decode(logs: TronLog[], form: Form, contractRet = "SUCCESS") {
  const t = call(issuer, USDT, form, { contractRet });
  return { tx: t, activities: decodeActivities(block([t]), [info(t, { log: logs })], opts) };
}

describe("wallet.blacklist: AddedBlackList, RemovedBlackList, DestroyedBlackFunds", () => {
  for (const form of FORMS) {
    for (const indexed of [false, true]) {
      test(`${form}, user ${indexed ? "indexed" : "in the data"}: each event, its type and the user; the balance destroyed`, () => {
        const logs = EVENTS.map(([signature]) => log(USDT, form, signature, indexed, 123_456_789n));
        expect(logs[0]!.topics).toHaveLength(indexed ? 2 : 1);
        const { tx, activities } = decode(logs, form);
        const asset = { type: "fungible", standard: "TRC20", contract: USDT, symbol: "USDT", decimals: 6 };
        expect(activities).toEqual(
          EVENTS.map(([, type], i) => ({
            family: "blacklist",
            txId: tx.txID,
            logIndex: i,
            parties: [{ address: user, role: "blacklisted" }],
            detail: { case: "blacklist", value: { type, address: user, amount: type === "funds_destroyed" ? "123456789" : undefined, asset } },
            fee: "0",
            result: "SUCCESS",
          })),
        );
      });
    }

    test(`${form}: the same events from a contract not in BLACKLIST_CONTRACTS make nothing`, () => {
      const logs = EVENTS.map(([signature]) => log(other, form, signature, false, 1n));
      expect(decode(logs, form).activities).toEqual([]);
      // Nor on another chain, where the set is another.
      const t = call(issuer, USDT, form);
      const usdtLogs = EVENTS.map(([signature]) => log(USDT, form, signature, false, 1n));
      const nile = { chainId: "tron:nile" as const, blacklistContracts: new Set<string>() };
      expect(decodeActivities(block([t]), [info(t, { log: usdtLogs })], nile)).toEqual([]);
    });
  }

  test("a failed transaction gives nothing", () => {
    expect(decode([log(USDT, "hex", "AddedBlackList(address)", false)], "hex", "REVERT").activities).toEqual([]);
  });

  test("a destroyed-funds log without its balance is skipped", () => {
    const whole = log(USDT, "visible", "DestroyedBlackFunds(address,uint256)", false, 5n);
    expect(decode([{ ...whole, data: whole.data!.slice(0, 64) }], "visible").activities).toEqual([]);
  });
});
