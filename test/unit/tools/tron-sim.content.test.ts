// The simulator's transaction content: memos really encoded in raw_data_hex, failed calls and their receipts and fees
// as java-tron shapes them, internal transactions, and the recorded lifecycle fixtures placed in a block.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { decodeBlock } from "../../../matcher/decode.ts";
import type { TronBlock, TronTransactionInfo } from "../../../common/tron-node/types.ts";
import { startTronSim, type TronSim } from "../../../tools/tron-sim/server.ts";

let sim: TronSim;
beforeAll(() => {
  sim = startTronSim({ blockMs: 0, txPerBlock: 3, poolSize: 20, recorded: false });
});
afterAll(() => sim.stop());

const post = async <T>(path: string, body: unknown): Promise<{ body: T; headers: Headers; status: number }> => {
  const res = await fetch(`${sim.url}${path}`, { method: "POST", body: JSON.stringify(body) });
  return { body: (await res.json()) as T, headers: res.headers, status: res.status };
};
const sha256 = (hex: string) => new Bun.CryptoHasher("sha256").update(Buffer.from(hex, "hex")).digest("hex");

/** The block holding `txId` and its infos, as the node serves them (visible=true). */
async function blockOf(txId: string): Promise<{ block: TronBlock; infos: TronTransactionInfo[] }> {
  const num = sim.chain.byTxId(txId)!.block.block_header.raw_data.number;
  const block = (await post<TronBlock>("/wallet/getblockbynum", { num, visible: true })).body;
  const infos = (await post<TronTransactionInfo[]>("/wallet/gettransactioninfobyblocknum", { num, visible: true })).body;
  return { block, infos };
}

test("a memo is raw_data field 10 inside raw_data_hex (txID its SHA-256), and decodes back", async () => {
  const [a, b] = sim.poolAddresses(2);
  const memo = "invoice 2026-11 ✓";
  const bytes = Buffer.from(memo, "utf8").toString("hex");
  const { body } = await post<{ txIds: string[] }>("/sim/transfers", {
    transfers: [
      { type: "trx", from: a, to: b, amount: 5, memo },
      { type: "trx", from: a, to: b, amount: 6, memoHex: "ff00" },
    ],
    produce: true,
  });
  const { block, infos } = await blockOf(body.txIds[0]!);
  const tx = block.transactions!.find((t) => t.txID === body.txIds[0])!;
  expect(tx.raw_data.data).toBe(bytes);
  // protobuf: field 10, wire type 2 → tag 0x52, then the length, then the bytes.
  expect(tx.raw_data_hex!).toContain(`52${(bytes.length / 2).toString(16).padStart(2, "0")}${bytes}`);
  expect(sha256(tx.raw_data_hex!)).toBe(tx.txID);
  const decoded = decodeBlock(block, infos);
  expect(decoded.find((d) => d.txId === body.txIds[0])).toMatchObject({ memo, fee: "268000", amount: "5" });
  expect(decoded.find((d) => d.txId === body.txIds[1])).toMatchObject({ memo: "0xff00" });
});

test("failed calls: REVERT and OUT_OF_ENERGY with java-tron's receipt, result, resMessage and fee", async () => {
  const [a, b] = sim.poolAddresses(2);
  const { body } = await post<{ txIds: string[] }>("/sim/transfers", {
    transfers: [
      { type: "trc20", from: a, to: b, amount: "6868769", result: "REVERT" },
      { type: "trc20", from: a, to: b, amount: "6868769", result: "OUT_OF_ENERGY" },
      { type: "trx", from: a, to: b, amount: 0 },
    ],
    produce: true,
  });
  const { block, infos } = await blockOf(body.txIds[0]!);
  const info = (id: string) => infos.find((i) => i.id === id)!;
  expect(info(body.txIds[0]!)).toMatchObject({ fee: 2086320, result: "FAILED", receipt: { result: "REVERT", energy_fee: 1741320, net_fee: 345000 } });
  expect(Buffer.from(info(body.txIds[0]!).resMessage!, "hex").toString()).toBe("REVERT opcode executed");
  expect(info(body.txIds[1]!)).toMatchObject({ fee: 999600, result: "FAILED", receipt: { result: "OUT_OF_ENERGY" } });
  expect(block.transactions!.find((t) => t.txID === body.txIds[1])!.ret).toEqual([{ contractRet: "OUT_OF_ENERGY" }]);
  for (const i of infos) expect(i.fee).toBeGreaterThan(0);
  const decoded = decodeBlock(block, infos);
  expect(decoded.find((d) => d.txId === body.txIds[0])).toMatchObject({ result: "REVERT", from: a, to: b, amount: "6868769", logIndex: -1, fee: "2086320" });
  expect(decoded.find((d) => d.txId === body.txIds[1])).toMatchObject({ result: "OUT_OF_ENERGY", fee: "999600" });
  expect(decoded.find((d) => d.txId === body.txIds[2])).toMatchObject({ result: "SUCCESS", amount: "0", standard: "TRX" });
});

test("internal transactions: a zero-value self-call, the move (TRX or TRC-10), and a rejected entry", async () => {
  const [contract, to] = sim.poolAddresses(2) as [string, string];
  const { body } = await post<{ txIds: string[] }>("/sim/transfers", {
    transfers: [
      { type: "internal", from: to, to, amount: 700000, contract },
      { type: "internal", from: to, to, amount: 42, tokenId: "1002000", contract },
    ],
    produce: true,
  });
  const { block, infos } = await blockOf(body.txIds[0]!);
  const trx = infos.find((i) => i.id === body.txIds[0])!;
  expect(trx.internal_transactions).toHaveLength(3);
  expect(trx.internal_transactions!.map((e) => [e.caller_address, e.transferTo_address, e.callValueInfo, e.rejected ?? false])).toEqual([
    [contract, contract, [{}], false],
    [contract, to, [{ callValue: 700000 }], false],
    [contract, to, [{ callValue: 700000 }], true],
  ]);
  expect(infos.find((i) => i.id === body.txIds[1])!.internal_transactions![1]!.callValueInfo).toEqual([{ callValue: 42, tokenId: "1002000" }]);
  const internal = decodeBlock(block, infos).filter((d) => d.internalIndex >= 0);
  expect(internal.map((d) => [d.txId, d.internalIndex, d.standard, d.tokenId, d.amount, d.from, d.to])).toEqual<(string | number | null)[][]>([
    [body.txIds[0]!, 1, "TRX", null, "700000", contract, to],
    [body.txIds[1]!, 1, "TRC10", "1002000", "42", contract, to],
  ]);
});

test("the recorded failed USDT transfers placed in a block: their own txIDs, infos synthesized from their fees", async () => {
  const { body } = await post<{ txIds: string[] }>("/sim/place", { fixture: "failed-usdt", produce: true });
  expect(body.txIds).toHaveLength(11);
  const { block, infos } = await blockOf(body.txIds[0]!);
  for (const id of body.txIds) {
    const tx = block.transactions!.find((t) => t.txID === id)!;
    expect(sha256(tx.raw_data_hex!)).toBe(id);
  }
  const failed = decodeBlock(block, infos).filter((d) => d.result !== "SUCCESS");
  expect(failed.map((d) => d.result).sort()).toEqual(["OUT_OF_ENERGY", "REVERT", "REVERT", "REVERT", "REVERT"]);
  const one = await post<TronTransactionInfo>("/wallet/gettransactioninfobyid", { value: failed[0]!.txId });
  expect(one.headers.get("x-tron-sim-synthesized")).toBe("transaction-info");
  expect(one.body.blockNumber).toBe(block.block_header.raw_data.number);
  expect((await post("/sim/place", { fixture: "nope" })).status).toBe(400);
});

test("the recorded testnet infos placed in a block: served as recorded, in the block they landed in", async () => {
  const { body } = await post<{ txIds: string[] }>("/sim/place", { fixture: "internal", produce: true });
  expect(body.txIds).toHaveLength(6);
  const { block, infos } = await blockOf(body.txIds[0]!);
  const one = await post<TronTransactionInfo>("/wallet/gettransactioninfobyid", { value: body.txIds[1] });
  expect(one.headers.get("x-tron-sim-synthesized")).toBeNull();
  expect(one.body).toMatchObject({ id: body.txIds[1], blockNumber: block.block_header.raw_data.number, blockTimeStamp: block.block_header.raw_data.timestamp, fee: 433850 });
  const internal = decodeBlock(block, infos).filter((d) => d.internalIndex >= 0);
  expect(internal.map((d) => [d.txId.slice(0, 8), d.internalIndex, d.amount])).toEqual([
    ["98d0f414", 1, "700000"],
    ["4ef51a57", 2, "2457950000"],
    ["80e07e3f", 1, "550000"],
  ]);
});
