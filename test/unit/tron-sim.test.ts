// The simulator speaks java-tron's HTTP API: recorded blocks byte for byte in the form they were recorded, the other
// form converted, `visible` honoured on GET and POST, chained generated blocks, forks, and synthesized transaction
// infos labelled as such.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { FIXTURES_DIR } from "../../tools/tron-sim/chain.ts";
import { startTronSim, type TronSim } from "../../tools/tron-sim/server.ts";
import type { TronBlock, TronTransactionInfo } from "../../matcher/tron-types.ts";

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
