// The lifecycle decoding (failed calls, internal transfers, fee, memo, zero value) against the real fixtures in
// fixtures/tron, each transfer checked against an independent decoding done with tronweb's own ABI and address
// utilities (no code shared with matcher/decode.ts).
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { decodeBlock, decodeMemo, type DecodedTransfer } from "../../../matcher/decode.ts";
import type { TronBlock, TronTransaction, TronTransactionInfo } from "../../../common/tron-node/types.ts";
import { renderVisible, toHexForm } from "../../../tools/tron-sim/forms.ts";
import { synthesizeTransactionInfos } from "../../../tools/tron-sim/txinfo.ts";
import {
  LIFECYCLE_FIXTURES_DIR,
  blockTxFromTronGrid,
  infoFromTronGrid,
  loadTestnetInfos,
  loadTronGridTransactions,
} from "../../../tools/tron-sim/recorded.ts";

const { TronWeb, utils } = createRequire(import.meta.url)("tronweb") as typeof import("tronweb");

const sha256 = (hex: string) => new Bun.CryptoHasher("sha256").update(Buffer.from(hex, "hex")).digest("hex");
const base58 = (hex41: string) => TronWeb.address.fromHex(hex41);

/** tronweb's ABI decoder over the call data's words as uint256 (an address word may carry 0x41 before its 20 bytes). */
function independentCall(data: string, owner: string): { from: string; to: string; amount: string } {
  const selector = data.slice(0, 8);
  const args = `0x${data.slice(8)}`;
  const addr = (w: bigint) => base58(`41${w.toString(16).padStart(64, "0").slice(-40)}`);
  if (selector === "a9059cbb") {
    const [to, amount] = utils.abi.decodeParams([], ["uint256", "uint256"], args, false) as unknown as [bigint, bigint];
    return { from: base58(owner), to: addr(to), amount: amount.toString() };
  }
  expect(selector).toBe("23b872dd");
  const [from, to, amount] = utils.abi.decodeParams([], ["uint256", "uint256", "uint256"], args, false) as unknown as [bigint, bigint, bigint];
  return { from: addr(from), to: addr(to), amount: amount.toString() };
}

function blockOf(txs: TronTransaction[], number = 50568556, timestamp = 1682319087000): TronBlock {
  return {
    blockID: number.toString(16).padStart(16, "0") + "0".repeat(48),
    block_header: { raw_data: { number, parentHash: "0".repeat(64), timestamp } },
    transactions: txs,
  };
}

describe("failed USDT transfers of account TPcUx2iw… (TronGrid v1, mainnet block 50568556)", () => {
  const records = loadTronGridTransactions();
  const txs = records.map(blockTxFromTronGrid);
  const infos = records.map(infoFromTronGrid);
  const decoded = decodeBlock(blockOf(txs), infos);
  const byTx = new Map<string, DecodedTransfer[]>();
  for (const d of decoded) byTx.set(d.txId, [...(byTx.get(d.txId) ?? []), d]);

  test("the capture is whole and real: 20 transactions, each txID the SHA-256 of its raw_data_hex", () => {
    expect(records).toHaveLength(20);
    for (const r of records) expect(sha256(r.raw_data_hex!)).toBe(r.txID);
  });

  test("4 × REVERT and 1 × OUT_OF_ENERGY, each from its call data as tronweb reads it, with the recorded fee", () => {
    const failed = records.filter((r) => r.ret[0]!.contractRet !== "SUCCESS");
    expect(failed.map((r) => r.ret[0]!.contractRet).sort()).toEqual(["OUT_OF_ENERGY", "REVERT", "REVERT", "REVERT", "REVERT"]);
    expect(failed.map((r) => r.ret[0]!.fee).sort()).toEqual([1741320, 2086320, 2086320, 2086320, 999600].sort());
    for (const r of failed) {
      const v = r.raw_data.contract[0]!.parameter.value;
      const mine = byTx.get(r.txID);
      expect(mine).toHaveLength(1);
      expect(mine![0]).toEqual({
        txId: r.txID,
        logIndex: -1,
        internalIndex: -1,
        ...independentCall(v.data!, v.owner_address!),
        standard: "TRC20",
        contract: base58(v.contract_address!),
        tokenId: null,
        fee: String(r.ret[0]!.fee),
        memo: null,
        result: r.ret[0]!.contractRet,
        expirationMs: r.raw_data.expiration!,
      });
    }
    const oee = byTx.get(records.find((r) => r.ret[0]!.contractRet === "OUT_OF_ENERGY")!.txID)![0]!;
    expect(oee).toMatchObject({ from: "TPcUx2iwjomVzmX3CHDDYmnEPJFTVeyqqS", to: "TXCvUayMx6AuBvS7qBa79ZAfhrwSA7vTjG", amount: "6868769", fee: "999600" });
  });

  test("the call that went through, and every TRX transfer (dust included), decode with their fee and SUCCESS", () => {
    for (const r of records.filter((r) => r.ret[0]!.contractRet === "SUCCESS")) {
      const c = r.raw_data.contract[0]!;
      const [mine, ...rest] = byTx.get(r.txID) ?? [];
      expect(rest).toEqual([]);
      expect(mine).toMatchObject({ result: "SUCCESS", fee: String(r.ret[0]!.fee ?? 0), internalIndex: -1 });
      if (c.type === "TransferContract") {
        expect(mine).toMatchObject({
          from: base58(c.parameter.value.owner_address!),
          to: base58(c.parameter.value.to_address!),
          amount: String(c.parameter.value.amount),
          standard: "TRX",
          logIndex: -1,
        });
      } else {
        // From its (synthesized) Transfer log, which must agree with the call data.
        expect(mine).toMatchObject({ ...independentCall(c.parameter.value.data!, c.parameter.value.owner_address!), logIndex: 0, fee: "13395900" });
      }
    }
    expect(decoded.filter((d) => d.amount === "1").length).toBeGreaterThan(0);
  });

  test("the same records in visible=true form decode the same", () => {
    const visible = decodeBlock(blockOf(txs.map((t) => renderVisible(t))), infos.map((i) => renderVisible(i)));
    expect(visible).toEqual(decoded);
  });
});

describe("internal transfers in the transaction infos of testnet block 1,000,000", () => {
  const infos = loadTestnetInfos();
  // The transactions were not recorded: a contract call carrying each info's txID stands in for each.
  const txs: TronTransaction[] = infos.map((info) => ({
    txID: info.id,
    ret: [{ contractRet: "SUCCESS" }],
    raw_data: {
      contract: [
        {
          type: "TriggerSmartContract",
          parameter: {
            value: { owner_address: "41" + "11".repeat(20), contract_address: info.contract_address ?? "41" + "22".repeat(20), data: "" },
            type_url: "type.googleapis.com/protocol.TriggerSmartContract",
          },
        },
      ],
      expiration: 1578594912000,
    },
  }));
  const decoded = decodeBlock(blockOf(txs, 1_000_000, 1578594852000), infos).filter((d) => d.internalIndex >= 0);

  test("each non-zero, non-rejected entry is one transfer at its position, as an independent reading finds them", () => {
    const independent: Partial<DecodedTransfer>[] = [];
    for (const info of infos) {
      (info.internal_transactions ?? []).forEach((e, i) => {
        const cv = (e.callValueInfo ?? [])[0]?.callValue;
        if (e.rejected || !cv) return;
        independent.push({
          txId: info.id,
          internalIndex: i,
          logIndex: -1,
          from: base58(e.caller_address!),
          to: base58(e.transferTo_address!),
          amount: String(cv),
          standard: "TRX",
          tokenId: null,
          fee: String(info.fee ?? 0),
          result: "SUCCESS",
        });
      });
    }
    const comparable = (t: Partial<DecodedTransfer>) => ({ ...t, contract: undefined, memo: undefined, expirationMs: undefined });
    expect(decoded.map(comparable)).toEqual(independent.map(comparable));
  });

  test("the three PROVENANCE.md names: 98d0f414… [1], 4ef51a57… [2], 80e07e3f… [1]", () => {
    expect(decoded.map((d) => [d.txId.slice(0, 8), d.internalIndex, d.amount, d.fee, d.from, d.to])).toEqual([
      ["98d0f414", 1, "700000", "433850", "TNt1Mr2Yau3C8Z2fyX1pwxKj3KpjuRmYkF", "TFHnPDjYj2i8bUnWozc8ZxHNMMQfSRBJZR"],
      ["4ef51a57", 2, "2457950000", "376380", "TNt1Mr2Yau3C8Z2fyX1pwxKj3KpjuRmYkF", "TXtpCUXaLmjMxCXy6krUvW5hgaocd9eezd"],
      ["80e07e3f", 1, "550000", "433850", "TNt1Mr2Yau3C8Z2fyX1pwxKj3KpjuRmYkF", "TFHnPDjYj2i8bUnWozc8ZxHNMMQfSRBJZR"],
    ]);
  });

  test("visible=true infos decode the same; TRC-10, zero-value and rejected entries as java-tron shapes them", () => {
    const visible = decodeBlock(blockOf(txs.map((t) => renderVisible(t)), 1_000_000, 1578594852000), infos.map((i) => renderVisible(i)));
    expect(visible.filter((d) => d.internalIndex >= 0)).toEqual(decoded);
    const real = infos.find((i) => i.id.startsWith("98d0f414"))!;
    const entry = real.internal_transactions![1]!;
    const edited: TronTransactionInfo = {
      ...real,
      internal_transactions: [
        { ...entry, callValueInfo: [{ tokenId: "1002000", callValue: 5 }] },
        { ...entry, callValueInfo: [{}] },
        { ...entry, rejected: true },
        { ...entry, callValueInfo: [{ callValue: 0 }] },
        entry,
      ],
    };
    const out = decodeBlock(blockOf([txs.find((t) => t.txID === real.id)!]), [edited]).filter((d) => d.internalIndex >= 0);
    expect(out.map((d) => [d.internalIndex, d.standard, d.tokenId, d.amount])).toEqual([
      [0, "TRC10", "1002000", "5"],
      [4, "TRX", null, "700000"],
    ]);
  });
});

describe("the zero-value poisoning transfer 9dbf4757… (mainnet block 60836289)", () => {
  const block = JSON.parse(readFileSync(join(LIFECYCLE_FIXTURES_DIR, "mainnet-block-60836289.getblockbynum.visible.json"), "utf8")) as TronBlock;
  const tx = block.transactions!.find((t) => t.txID.startsWith("9dbf4757"))!;
  const v = tx.raw_data.contract[0]!.parameter.value;
  const expected = () => {
    const call = independentCall(v.data!, TronWeb.address.toHex(v.owner_address!));
    return { ...call, amount: "0", standard: "TRC20", contract: v.contract_address };
  };

  test("transferFrom(victim, look-alike, 0) decodes as a zero-value transfer from the victim", () => {
    // Its info is synthesized like the block's others: the Transfer log the call data implies.
    const infos = synthesizeTransactionInfos(toHexForm({ ...block, transactions: [tx] }), () => undefined);
    const [d, ...rest] = decodeBlock({ ...block, transactions: [tx] }, infos.map((i) => renderVisible(i)));
    expect(rest).toEqual([]);
    expect(d).toMatchObject({ ...expected(), logIndex: 0, result: "SUCCESS" });
    expect(d!.from).not.toBe(base58(TronWeb.address.toHex(v.owner_address!)));
  });

  test("the same call failed is decoded from its call data: from is transferFrom's first argument", () => {
    const failed = { ...tx, ret: [{ contractRet: "REVERT" }] };
    const [d, ...rest] = decodeBlock({ ...block, transactions: [failed] }, null);
    expect(rest).toEqual([]);
    expect(d).toMatchObject({ ...expected(), logIndex: -1, internalIndex: -1, result: "REVERT", fee: "0" });
  });
});

describe("memo (raw_data.data)", () => {
  test("UTF-8 text, 0x-hex when not valid UTF-8, null when absent", () => {
    expect(decodeMemo(Buffer.from("send to tony ✓", "utf8").toString("hex"))).toBe("send to tony ✓");
    expect(decodeMemo("ff00fe")).toBe("0xff00fe");
    expect(decodeMemo("C3")).toBe("0xc3");
    expect(decodeMemo(undefined)).toBeNull();
    expect(decodeMemo("")).toBeNull();
  });
});
