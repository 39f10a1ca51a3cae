// The decoder against the recorded mainnet data, checked transfer by transfer against an independent decoding done
// with tronweb's own address and ABI utilities (no code shared with matcher/decode.ts).
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { isBase58Address } from "../../../common/tron-address.ts";
import { TRON_CHAINS } from "../../../common/contract/index.ts";
import {
  TRANSFER_TOPIC,
  blockNeedsTransactionInfo,
  decodeBlock,
  decodeTransaction,
  decodeTransactionInfo,
  type DecodedTransfer,
} from "../../../matcher/decode.ts";
import { knownToken, tokenTable } from "../../../matcher/tokens.ts";
import type { TronBlock, TronTransaction, TronTransactionInfo } from "../../../common/tron-node/types.ts";
import { ACTIVITY_CONTRACTS } from "../../../matcher/activity/contracts.ts";
import { address, block as blockOf, printed, tx as txOf } from "../../support/tron-json.ts";

// tronweb through its CommonJS build: under Bun its ESM build sometimes fails to load ("proto is not defined" in
// its generated protobuf files, which need a load order only require() guarantees; see common/tron-address.ts).
const { TronWeb, utils } = createRequire(import.meta.url)("tronweb") as typeof import("tronweb");

const FIXTURES = join(import.meta.dir, "../../../fixtures/tron");
const load = <T>(name: string): T => JSON.parse(readFileSync(join(FIXTURES, name), "utf8")) as T;

const hexBlock = load<TronBlock>("mainnet-block-61132092.getblockbynum.json");
const visibleBlock = load<TronBlock>("mainnet-block-60836289.getblockbynum.visible.json");
const usdtInfo = load<TronTransactionInfo>("mainnet-tx-661f1df8.gettransactioninfobyid.visible.json");

// Independent: tronweb converts, whatever form the node printed.
function tronwebBase58(address: string): string {
  return address.startsWith("T") ? TronWeb.address.fromHex(TronWeb.address.toHex(address)) : TronWeb.address.fromHex(address);
}

function independentNative(tx: TronTransaction, visible: boolean): ReturnType<typeof pick> {
  const c = tx.raw_data.contract[0]!;
  const v = c.parameter.value;
  return {
    from: tronwebBase58(v.owner_address!),
    to: tronwebBase58(v.to_address!),
    amount: String(v.amount),
    standard: c.type === "TransferContract" ? ("TRX" as const) : ("TRC10" as const),
    tokenId: c.type === "TransferContract" ? null : visible ? v.asset_name! : TronWeb.toUtf8(v.asset_name!),
  };
}

function nativeTxs(block: TronBlock) {
  return (block.transactions ?? []).filter((t) => ["TransferContract", "TransferAssetContract"].includes(t.raw_data.contract[0]!.type));
}

function pick(t: DecodedTransfer): Pick<DecodedTransfer, "from" | "to" | "amount" | "standard" | "tokenId"> {
  return { from: t.from, to: t.to, amount: t.amount, standard: t.standard, tokenId: t.tokenId };
}

describe("TRX and TRC-10 in the recorded blocks", () => {
  for (const [name, block, visible, trx, trc10] of [
    ["61132092 (visible=false, hex)", hexBlock, false, 114, 11],
    ["60836289 (visible=true, base58)", visibleBlock, true, 39, 23],
  ] as const) {
    test(`block ${name}: every transfer matches tronweb's decoding`, () => {
      const txs = nativeTxs(block);
      expect(txs.filter((t) => t.raw_data.contract[0]!.type === "TransferContract").length).toBe(trx);
      expect(txs.filter((t) => t.raw_data.contract[0]!.type === "TransferAssetContract").length).toBe(trc10);
      for (const tx of txs) {
        const decoded = decodeTransaction(tx);
        expect(decoded).not.toBeNull();
        expect(pick(decoded!)).toEqual(independentNative(tx, visible));
        expect(decoded!.txId).toBe(tx.txID);
        expect(decoded!.logIndex).toBe(-1);
        expect(decoded!.contract).toBeNull();
      }
    });
  }

  test("TRC-10 asset names: hex ASCII with visible=false, text with visible=true", () => {
    const hexTx = nativeTxs(hexBlock).find((t) => t.raw_data.contract[0]!.parameter.value.asset_name === "31303035303233")!;
    expect(decodeTransaction(hexTx)!.tokenId).toBe("1005023");
    const textTx = nativeTxs(visibleBlock).find((t) => t.raw_data.contract[0]!.type === "TransferAssetContract")!;
    expect(decodeTransaction(textTx)!.tokenId).toBe(textTx.raw_data.contract[0]!.parameter.value.asset_name!);
    expect(decodeTransaction(textTx)!.tokenId).toMatch(/^\d+$/);
  });

  test("non-transfer contracts (delegation, account creation, contract calls) make no native transfer", () => {
    for (const block of [hexBlock, visibleBlock]) {
      const others = (block.transactions ?? []).filter((t) => !nativeTxs(block).includes(t));
      expect(others.length).toBeGreaterThan(0);
      for (const tx of others) expect(decodeTransaction(tx)).toBeNull();
    }
  });

  test("decodeBlock without transaction infos yields exactly the native transfers, in block order", () => {
    const decoded = decodeBlock(hexBlock, null);
    expect(decoded.map((d) => d.txId)).toEqual(nativeTxs(hexBlock).map((t) => t.txID));
  });
});

describe("TRC-20 from the recorded transaction info (tx 661f1df8…)", () => {
  const tx = visibleBlock.transactions!.find((t) => t.txID === usdtInfo.id)!;

  test("the Transfer log decodes to what tronweb's ABI decoder reads from the log", () => {
    const [decoded, ...rest] = decodeTransactionInfo(usdtInfo);
    expect(rest).toHaveLength(0);
    const log = usdtInfo.log![0]!;
    const [fromEvm] = utils.abi.decodeParams([], ["address"], `0x${log.topics![1]}`, false) as unknown as [string];
    const [toEvm] = utils.abi.decodeParams([], ["address"], `0x${log.topics![2]}`, false) as unknown as [string];
    const [amount] = utils.abi.decodeParams([], ["uint256"], `0x${log.data}`, false) as unknown as [bigint];
    expect(decoded).toMatchObject({
      txId: usdtInfo.id,
      logIndex: 0,
      from: TronWeb.address.fromHex(`41${fromEvm.slice(2)}`),
      to: TronWeb.address.fromHex(`41${toEvm.slice(2)}`),
      amount: amount.toString(),
      standard: "TRC20",
      contract: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
      tokenId: null,
    });
    expect(decoded!.from).toBe("TP4MZM8iDVEfRbtbvcidqVQBt4SQ9Pfi8R");
    expect(decoded!.to).toBe("TW3NSuhT68vXKdamU7Rkq6sfEVCFwoDfGb");
    expect(decoded!.amount).toBe("2384950100");
  });

  test("it agrees with the transaction's calldata, whose address word carries a 21-byte address (0x41 inside)", () => {
    const v = tx.raw_data.contract[0]!.parameter.value;
    expect(v.data!.slice(8, 72)).toMatch(/^0{22}41/);
    // tronweb's `address` decoder chokes on the 0x41 byte (ethers checks the padding), which is exactly the trap:
    // read the word as a uint256 and keep its last 20 bytes.
    expect(() => utils.abi.decodeParams([], ["address", "uint256"], `0x${v.data!.slice(8)}`, false)).toThrow();
    const [toWord, value] = utils.abi.decodeParams([], ["uint256", "uint256"], `0x${v.data!.slice(8)}`, false) as unknown as [bigint, bigint];
    const [decoded] = decodeTransactionInfo(usdtInfo);
    expect(decoded!.to).toBe(TronWeb.address.fromHex(`41${toWord.toString(16).padStart(64, "0").slice(-40)}`));
    expect(decoded!.from).toBe(v.owner_address!);
    expect(decoded!.amount).toBe(value.toString());
    expect(decoded!.contract).toBe(v.contract_address!);
  });

  test("in a block, the log transfer joins the block's native transfers", () => {
    const decoded = decodeBlock(visibleBlock, [usdtInfo]);
    expect(decoded.filter((d) => d.standard === "TRC20")).toHaveLength(1);
    expect(decoded.length).toBe(nativeTxs(visibleBlock).length + 1);
  });

  test("amounts at the edges of the fast path (2^52 − 1, 2^52, 2^256 − 1, 0) are the exact uint256", () => {
    const amounts = [2n ** 52n - 1n, 2n ** 52n, 2n ** 53n + 1n, 2n ** 256n - 1n, 0n, 1n];
    const info: TronTransactionInfo = {
      ...usdtInfo,
      log: amounts.map((a) => ({ ...usdtInfo.log![0]!, data: a.toString(16).padStart(64, "0") })),
    };
    expect(decodeTransactionInfo(info).map((t) => t.amount)).toEqual(amounts.map((a) => a.toString()));
    // Upper-case digits and a 0x prefix, as some encoders print them.
    const upper: TronTransactionInfo = { ...usdtInfo, log: [{ ...usdtInfo.log![0]!, data: `0x${(2n ** 40n + 0xabcn).toString(16).toUpperCase().padStart(64, "0")}` }] };
    expect(decodeTransactionInfo(upper)[0]!.amount).toBe((2n ** 40n + 0xabcn).toString());
  });

  test("the same info in visible=false form (log address as 20-byte hex, 41-hex contract) decodes the same", () => {
    const hexInfo: TronTransactionInfo = {
      ...usdtInfo,
      contract_address: "41a614f803b6fd780986a42c78ec9c7f77e6ded13c",
      log: [{ ...usdtInfo.log![0]!, address: "a614f803b6fd780986a42c78ec9c7f77e6ded13c" }],
    };
    expect(decodeTransactionInfo(hexInfo)).toEqual(decodeTransactionInfo(usdtInfo));
  });
});

describe("what is not a broadcasted transfer", () => {
  const log = usdtInfo.log![0]!;
  test("a TRC-721 Transfer (4 topics: the token id is indexed) is not a fungible transfer", () => {
    const nft = { ...usdtInfo, log: [{ ...log, topics: [...log.topics!, "0".repeat(63) + "7"], data: "" }] };
    expect(decodeTransactionInfo(nft)).toEqual([]);
  });
  test("other events (Approval) are ignored; logIndex is the position in the log array", () => {
    const approval = { ...log, topics: ["8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925", ...log.topics!.slice(1)] };
    const info = { ...usdtInfo, log: [approval, log, log] };
    expect(decodeTransactionInfo(info).map((t) => t.logIndex)).toEqual([1, 2]);
  });
  test("a reverted or failed contract call yields nothing, even with logs present", () => {
    expect(decodeTransactionInfo({ ...usdtInfo, receipt: { ...usdtInfo.receipt, result: "REVERT" } })).toEqual([]);
    expect(decodeTransactionInfo({ ...usdtInfo, result: "FAILED" })).toEqual([]);
  });
  test("a failed native transfer is decoded with its result; a failed call's logs are not read, its call data is", () => {
    const trx = nativeTxs(hexBlock)[0]!;
    expect(decodeTransaction({ ...trx, ret: [{ contractRet: "REVERT" }] })).toMatchObject({ txId: trx.txID, result: "REVERT" });
    const usdtTx = visibleBlock.transactions!.find((t) => t.txID === usdtInfo.id)!;
    const failed: TronBlock = { ...visibleBlock, transactions: [{ ...usdtTx, ret: [{ contractRet: "OUT_OF_ENERGY" }] }] };
    const [fromCalldata, ...rest] = decodeBlock(failed, [usdtInfo]);
    expect(rest).toEqual([]);
    expect(fromCalldata).toMatchObject({ logIndex: -1, internalIndex: -1, result: "OUT_OF_ENERGY", amount: "2384950100" });
  });
  test("the Transfer topic is keccak256 of the event signature", () => {
    expect(utils.ethersUtils.id("Transfer(address,address,uint256)").slice(2)).toBe(TRANSFER_TOPIC);
  });
  test("a uint256 amount beyond 2^64 stays exact", () => {
    const big = { ...usdtInfo, log: [{ ...log, data: "f".repeat(64) }] };
    expect(decodeTransactionInfo(big)[0]!.amount).toBe((2n ** 256n - 1n).toString());
  });
});

describe("token table", () => {
  test("every entry is a valid base58check address with a symbol and decimals", () => {
    for (const chain of TRON_CHAINS) {
      for (const [address, info] of Object.entries(tokenTable()[chain])) {
        expect(isBase58Address(address)).toBe(true);
        expect(info.symbol).toMatch(/^[A-Z]+$/);
        expect(Number.isInteger(info.decimals)).toBe(true);
      }
    }
  });
  test("a contract is known only on the chain it was deployed on", () => {
    expect(knownToken("tron:mainnet", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")).toEqual({ symbol: "USDT", decimals: 6 });
    expect(knownToken("tron:nile", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")).toBeNull();
    expect(knownToken("tron:nile", "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf")).toEqual({ symbol: "USDT", decimals: 6 });
    expect(knownToken("tron:mainnet", "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf")).toBeNull();
  });
});

describe("blockNeedsTransactionInfo", () => {
  test("true for a block holding any activity contract (fees; the withdrawals' and cancellations' amounts)", () => {
    for (const type of ACTIVITY_CONTRACTS) expect(blockNeedsTransactionInfo(blockOf([txOf(type, { owner_address: printed(address(1), "hex") })]))).toBe(true);
    expect(ACTIVITY_CONTRACTS).toContain("WithdrawExpireUnfreezeContract");
    expect(ACTIVITY_CONTRACTS).toHaveLength(9);
  });

  test("still false for a block of other system contracts only", () => {
    expect(blockNeedsTransactionInfo(blockOf([txOf("AccountCreateContract", { owner_address: printed(address(1), "hex"), account_address: printed(address(2), "hex") })]))).toBe(false);
  });
});
