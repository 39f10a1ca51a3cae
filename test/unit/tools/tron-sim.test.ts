// The simulator speaks java-tron's HTTP API: recorded blocks byte for byte in the form they were recorded, the other
// form converted, `visible` honoured on GET and POST, chained generated blocks, forks, and synthesized transaction
// infos labelled as such.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { FIXTURES_DIR } from "../../../tools/tron-sim/chain.ts";
import { startTronSim, type TronSim } from "../../../tools/tron-sim/server.ts";
import type { TronBlock, TronTransactionInfo } from "../../../common/tron-node/types.ts";

let sim: TronSim;
beforeAll(() => {
  sim = startTronSim({ blockMs: 0, txPerBlock: 10, poolSize: 50 });
});
afterAll(() => sim.stop());

const post = async (path: string, body: unknown) => fetch(`${sim.url}${path}`, { method: "POST", body: JSON.stringify(body) });

test("recorded blocks are served byte for byte in their recorded form, and converted in the other", async () => {
  const hexText = readFileSync(join(FIXTURES_DIR, "mainnet-block-61132092.getblockbynum.json"), "utf8");
  expect(await (await post("/wallet/getblockbynum", { num: 61132092 })).text()).toBe(hexText);
  const visText = readFileSync(join(FIXTURES_DIR, "mainnet-block-60836289.getblockbynum.visible.json"), "utf8");
  expect(await (await fetch(`${sim.url}/wallet/getblockbynum?num=60836289&visible=true`)).text()).toBe(visText);

  const asVisible = (await (await post("/wallet/getblockbynum", { num: 61132092, visible: true })).json()) as TronBlock;
  const tx = asVisible.transactions!.find((t) => t.txID === "b184b3e4e57be38cfa572401ea38e45fb58f853f320e2e9657b782caab539633")!;
  expect(tx.raw_data.contract[0]!.parameter.value).toMatchObject({ asset_name: "1005023", owner_address: expect.stringMatching(/^T/) });
  const asHex = (await (await fetch(`${sim.url}/wallet/getblockbynum?num=60836289`)).json()) as TronBlock;
  expect(asHex.block_header.raw_data.witness_address).toBe("418a445facc2aa94d72292ebbcb2a611e9fd8a6c6e");
});

test("the recorded transaction info is real; others are synthesized and say so", async () => {
  const res = await post("/wallet/gettransactioninfobyid", { value: "661f1df88ce02b746efe7449c3c7a04d6d21a7fc019723c92679228d8275ad57", visible: true });
  expect(res.headers.get("x-tron-sim-synthesized")).toBeNull();
  const recorded = JSON.parse(readFileSync(join(FIXTURES_DIR, "mainnet-tx-661f1df8.gettransactioninfobyid.visible.json"), "utf8"));
  expect(await res.json()).toEqual(recorded);
  const byBlock = await post("/wallet/gettransactioninfobyblocknum", { num: 61132092 });
  expect(byBlock.headers.get("x-tron-sim-synthesized")).toBe("transaction-info");
  const infos = (await byBlock.json()) as TronTransactionInfo[];
  expect(infos).toHaveLength(281);
  expect(infos.filter((i) => i.log?.length)).toHaveLength(112);
});

test("generated blocks chain by parentHash, carry java-tron blockIDs, and the head advances on produce", async () => {
  const before = (await (await post("/wallet/getnowblock", {})).json()) as TronBlock;
  sim.produce(2);
  const range = (await (await post("/wallet/getblockbylimitnext", { startNum: before.block_header.raw_data.number, endNum: before.block_header.raw_data.number + 3 })).json()) as { block: TronBlock[] };
  expect(range.block).toHaveLength(3);
  for (let i = 1; i < 3; i++) {
    const b = range.block[i]!;
    expect(b.block_header.raw_data.parentHash).toBe(range.block[i - 1]!.blockID);
    expect(b.blockID.slice(0, 16)).toBe(b.block_header.raw_data.number.toString(16).padStart(16, "0"));
  }
  expect(await (await post("/wallet/getblockbynum", { num: before.block_header.raw_data.number + 10 })).json()).toEqual({});
});

test("a fork replaces the newest blocks with a new branch from the same parent", async () => {
  sim.produce(3);
  const head = sim.chain.head().block;
  const res = (await (await post("/sim/fork", { depth: 2, length: 3 })).json()) as { ancestor: number; removed: string[]; added: string[] };
  expect(res.ancestor).toBe(head.block_header.raw_data.number - 2);
  expect(res.added).toHaveLength(3);
  const first = (await (await post("/wallet/getblockbynum", { num: res.ancestor + 1 })).json()) as TronBlock;
  expect(first.blockID).toBe(res.added[0]!);
  expect(first.block_header.raw_data.parentHash).toBe(sim.chain.byNumber(res.ancestor)!.block.blockID);
  expect(await (await post("/wallet/getblockbyid", { value: res.removed[0] })).json()).toEqual({});
});

test("the solidity API serves only up to the solidified head, which trails the head by solidLag blocks", async () => {
  await post("/sim/config", { solidLag: 3 });
  sim.produce(5);
  const head = sim.chain.head().block.block_header.raw_data.number;
  const state = (await (await fetch(`${sim.url}/sim/state`)).json()) as { head: { number: number }; solid: { number: number }; solidLag: number };
  expect(state.solid.number).toBe(head - 3);
  expect(state.solidLag).toBe(3);
  const now = (await (await post("/walletsolidity/getnowblock", {})).json()) as TronBlock;
  expect(now.block_header.raw_data.number).toBe(head - 3);
  expect(await (await post("/walletsolidity/getblockbynum", { num: head - 2 })).json()).toEqual({});
  expect(((await (await post("/walletsolidity/getblockbynum", { num: head - 3 })).json()) as TronBlock).blockID).toBe(now.blockID);
  expect(await (await post("/walletsolidity/gettransactioninfobyblocknum", { num: head })).json()).toEqual([]);
  const range = (await (await post("/walletsolidity/getblockbylimitnext", { startNum: head - 4, endNum: head + 1 })).json()) as { block: TronBlock[] };
  expect(range.block.map((b) => b.block_header.raw_data.number)).toEqual([head - 4, head - 3]);
  // The full node still serves the head.
  expect(((await (await post("/wallet/getnowblock", {})).json()) as TronBlock).block_header.raw_data.number).toBe(head);

  // A fork reaching the solidified head is refused; one above it is not.
  const refused = await post("/sim/fork", { depth: 4 });
  expect(refused.status).toBe(400);
  expect(sim.chain.head().block.block_header.raw_data.number).toBe(head);
  expect((await post("/sim/fork", { depth: 3 })).status).toBe(200);

  // Without the solidity API every /walletsolidity request is a 404.
  await post("/sim/config", { solidityApi: false });
  expect((await post("/walletsolidity/getnowblock", {})).status).toBe(404);
  expect((await post("/wallet/getnowblock", {})).status).toBe(200);
  await post("/sim/config", { solidityApi: true, solidLag: 19 });
});

test("a fork re-includes only the chosen transactions; advanceMs moves the clock for blocks and expirations", async () => {
  const ids = sim.chain.enqueue([
    { type: "trx", from: sim.poolAddresses(1)[0]!, to: sim.poolAddresses(2)[1]!, amount: 5 },
    { type: "trx", from: sim.poolAddresses(1)[0]!, to: sim.poolAddresses(2)[1]!, amount: 6 },
  ]);
  sim.produce(1);
  const res = (await (await post("/sim/fork", { depth: 1, reinclude: [ids[1]] })).json()) as { added: string[] };
  const block = sim.chain.byBlockId(res.added[0]!)!.block;
  const txIds = (block.transactions ?? []).map((t) => t.txID);
  expect(txIds).toContain(ids[1]!);
  expect(txIds).not.toContain(ids[0]!);

  const before = Date.now();
  const produced = (await (await post("/sim/produce", { count: 1, advanceMs: 120_000 })).json()) as { blocks: { timestamp: number }[] };
  expect(produced.blocks[0]!.timestamp).toBeGreaterThanOrEqual(before + 120_000);
  const [later] = sim.chain.enqueue([{ type: "trx", from: sim.poolAddresses(1)[0]!, to: sim.poolAddresses(2)[1]!, amount: 7 }]);
  const [stored] = sim.produce(1);
  const tx = stored!.block.transactions!.find((t) => t.txID === later)!;
  expect(tx.raw_data.expiration).toBeGreaterThanOrEqual(before + 180_000);
});
