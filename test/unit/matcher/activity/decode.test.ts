// decodeActivities over a whole block: block order across families, transfers left to decodeBlock, infos matched by
// transaction id whatever their order.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ACTIVITY_CONTRACTS } from "../../../../matcher/activity/contracts.ts";
import { decodeActivities } from "../../../../matcher/activity/decode.ts";
import type { TronBlock } from "../../../../common/tron-node/types.ts";
import { address, block, call, eventLog, info, printed, tx } from "../../../support/tron-json.ts";

const USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const opts = { chainId: "tron:mainnet" as const, blacklistContracts: new Set([USDT]) };
const a = address(1);
const b = address(2);

describe("decodeActivities", () => {
  test("block order: per transaction its contract or its logs in order; transfers are not activity", () => {
    const approve = call(a, USDT, "hex");
    const trx = tx("TransferContract", { owner_address: printed(a, "hex"), to_address: printed(b, "hex"), amount: 5 });
    const freeze = tx("FreezeBalanceV2Contract", { owner_address: printed(a, "hex"), frozen_balance: 1, resource: "ENERGY" });
    const freezeFailed = tx("FreezeBalanceV2Contract", { owner_address: printed(a, "hex"), frozen_balance: 1 }, { contractRet: "FAILED" });
    const blacklist = call(b, USDT, "hex");
    const approvalLog = eventLog(USDT, "hex", "Approval(address,address,uint256)", [
      { type: "address", value: a, indexed: true },
      { type: "address", value: b, indexed: true },
      { type: "uint256", value: 1n },
    ]);
    const transferLog = eventLog(USDT, "hex", "Transfer(address,address,uint256)", [
      { type: "address", value: a, indexed: true },
      { type: "address", value: b, indexed: true },
      { type: "uint256", value: 1n },
    ]);
    const addedLog = eventLog(USDT, "hex", "AddedBlackList(address)", [{ type: "address", value: a }]);
    const txs = [approve, trx, freeze, freezeFailed, blacklist];
    // Infos in another order than the block's: found by id.
    const infos = [
      info(blacklist, { log: [addedLog], fee: 3 }),
      info(freezeFailed),
      info(freeze, { fee: 2 }),
      info(trx, { fee: 9 }),
      info(approve, { log: [transferLog, approvalLog, approvalLog], fee: 1 }),
    ];
    const decoded = decodeActivities(block(txs), infos, opts);
    expect(decoded.map((d) => [d.family, d.txId, d.logIndex, d.fee])).toEqual([
      ["approval", approve.txID, 1, "1"],
      ["approval", approve.txID, 2, "1"],
      ["resource", freeze.txID, -1, "2"],
      ["blacklist", blacklist.txID, 0, "3"],
    ]);
  });

  test("a call's logs need its info: without infos there are none", () => {
    const approve = call(a, USDT, "visible");
    expect(decodeActivities(block([approve]), null, opts)).toEqual([]);
    expect(decodeActivities({ ...block([]), transactions: undefined }, null, opts)).toEqual([]);
  });

  test("a recorded block without activity contracts decodes to nothing", () => {
    const file = join(import.meta.dir, "../../../../fixtures/tron/mainnet-block-61132092.getblockbynum.json");
    const recorded = JSON.parse(readFileSync(file, "utf8")) as TronBlock;
    const plain = { ...recorded, transactions: recorded.transactions!.filter((t) => !ACTIVITY_CONTRACTS.includes(t.raw_data.contract[0]!.type)) };
    expect(plain.transactions.length).toBe(281 - 42);
    expect(decodeActivities(plain, null, opts)).toEqual([]);
  });
});
