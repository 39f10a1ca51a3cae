// The backlog made on demand (tools/tron-sim/backlog.ts, `--backlog-on-demand`): the same chain whenever a block is
// asked for (a function of its number and the seed), chained by parentHash into the blocks made up front, with the
// history's transfers where the history says, a bounded cache, and forks reaching into it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { TronBlock, TronTransactionInfo } from "../../../common/tron-node/types.ts";
import { OnDemandBacklog } from "../../../tools/tron-sim/backlog.ts";
import { addressPool, MAINNET_MIX } from "../../../tools/tron-sim/generate.ts";
import { startTronSim, type TronSim } from "../../../tools/tron-sim/server.ts";

const START = 50_000_000;
/** The first block (generated, not on demand) is START - 1; the backlog is START .. HEAD, its newest made up front. */
const FIRST = START - 1;
const HEAD = START + 60 - 1;
const BACKLOG = 60;
const WALLET = "TPH479jG91GcRbPr4pnx7bwdN47twUvuy8";
const options = { blockMs: 0, recorded: false, startNumber: START, backlog: BACKLOG, txPerBlock: 12, poolSize: 40, seed: 4, solidLag: 19 };

let sim: TronSim;
beforeAll(() => {
  sim = startTronSim({ ...options, backlogOnDemand: true, backlogCache: 8, history: { to: [WALLET], every: 7 } });
});
afterAll(() => sim.stop());

const post = async <T>(s: TronSim, path: string, body: unknown): Promise<T> =>
  (await (await fetch(`${s.url}${path}`, { method: "POST", body: JSON.stringify(body) })).json()) as T;
const range = async (s: TronSim, start: number, end: number) =>
  (await post<{ block?: TronBlock[] }>(s, "/wallet/getblockbylimitnext", { startNum: start, endNum: end, visible: true })).block ?? [];

test("every block chains by parentHash from the first block to the head, 3 s apart, and is the same whenever asked", async () => {
  const blocks = [...(await range(sim, FIRST, FIRST + 50)), ...(await range(sim, FIRST + 50, HEAD + 1))];
  expect(blocks.map((b) => b.block_header.raw_data.number)).toEqual(Array.from({ length: BACKLOG + 1 }, (_, i) => FIRST + i));
  for (let i = 1; i < blocks.length; i++) {
    const h = blocks[i]!.block_header.raw_data;
    expect(h.parentHash).toBe(blocks[i - 1]!.blockID);
    expect(blocks[i]!.blockID.slice(0, 16)).toBe(h.number.toString(16).padStart(16, "0"));
    if (i > 1) expect(h.timestamp - blocks[i - 1]!.block_header.raw_data.timestamp).toBe(3_000);
    expect(blocks[i]!.transactions!.length).toBeGreaterThanOrEqual(12);
  }
  // Far more blocks than the cache of 8 were made: asked again, each is made again, identical.
  const second = await range(sim, START, START + 40);
  expect(second.map((b) => b.blockID)).toEqual(blocks.slice(1, 41).map((b) => b.blockID));
  expect(JSON.stringify(second[3])).toBe(JSON.stringify(blocks[4]));
  const state = await (await fetch(`${sim.url}/sim/state`)).json();
  expect(state).toMatchObject({ first: { number: FIRST }, head: { number: HEAD }, solid: { number: HEAD - 19 } });
});

test("the history's transfers are in the blocks it lists, with their infos, found by txId and by block id", async () => {
  const { transfers } = (await (await fetch(`${sim.url}/sim/history`)).json()) as { transfers: { blockNumber: number; txId: string; to: string; type: string }[] };
  // Backlog blocks 0, 7, 14, …, 56 (the oldest first), alternating TRX and USDT, as when made up front.
  expect(transfers.map((t) => [t.blockNumber, t.type])).toEqual(Array.from({ length: 9 }, (_, i) => [START + 7 * i, i % 2 === 0 ? "trx" : "trc20"]));
  for (const t of [transfers[0]!, transfers[1]!]) {
    const block = await post<TronBlock>(sim, "/wallet/getblockbynum", { num: t.blockNumber, visible: true });
    const tx = block.transactions!.find((x) => x.txID === t.txId)!;
    expect(tx.raw_data.contract[0]!.type).toBe(t.type === "trx" ? "TransferContract" : "TriggerSmartContract");
    if (t.type === "trx") expect(tx.raw_data.contract[0]!.parameter.value.to_address).toBe(WALLET);
    const info = await post<TronTransactionInfo>(sim, "/wallet/gettransactioninfobyid", { value: t.txId, visible: true });
    expect(info).toMatchObject({ id: t.txId, blockNumber: t.blockNumber });
    expect((await post<TronBlock>(sim, "/wallet/getblockbyid", { value: block.blockID })).blockID).toBe(block.blockID);
  }
});

test("a block is a function of its number, the seed and the backlog's end; the cache holds at most its size", () => {
  const spec = {
    anchor: { number: 99, blockID: "0".repeat(64) },
    count: 30,
    lastTimestampMs: 1_700_000_000_000,
    txPerBlock: 5,
    pool: addressPool(20, 1),
    mix: MAINNET_MIX,
    seed: 9,
    wrap: (block: TronBlock) => ({ block }),
  };
  const b = new OnDemandBacklog({ ...spec, cacheBlocks: 4, history: { to: [WALLET], every: 3 } });
  // Another backlog of the same seed makes the same blocks, whatever order they are asked in.
  const other = new OnDemandBacklog({ ...spec, history: { to: [WALLET], every: 3 } });
  expect(JSON.stringify(other.byNumber(117)!.block)).toBe(JSON.stringify(b.byNumber(117)!.block));
  expect(other.history).toEqual(b.history);
  const reseeded = new OnDemandBacklog({ ...spec, seed: 10 });
  expect(reseeded.byNumber(117)!.block.blockID).not.toBe(b.byNumber(117)!.block.blockID);
  const first = JSON.stringify(b.byNumber(100)!.block);
  for (let n = 100; n <= 129; n++) b.byNumber(n);
  expect(b.made).toBe(31);
  expect(b.byNumber(129)).toBe(b.byNumber(129)!); // cached
  expect(b.made).toBe(31);
  expect(JSON.stringify(b.byNumber(100)!.block)).toBe(first);
  expect(b.made).toBe(32);
  expect(b.byNumber(100)!.block.block_header.raw_data.parentHash).toBe("0".repeat(64));
  expect(b.byNumber(130)).toBeUndefined();
});

test("a fork reaching into the on-demand blocks replaces them; their ids are no longer served", async () => {
  const head = HEAD;
  const old = await post<TronBlock>(sim, "/wallet/getblockbynum", { num: head - 4 });
  const res = await post<{ ancestor: number; removed: string[]; added: string[] }>(sim, "/sim/fork", { depth: 5 });
  expect(res.ancestor).toBe(head - 5);
  expect(res.removed).toContain(old.blockID);
  expect(await post(sim, "/wallet/getblockbyid", { value: old.blockID })).toEqual({});
  const blocks = await range(sim, head - 6, head + 1);
  expect(blocks.map((b) => b.blockID).slice(2)).toEqual(res.added);
  for (let i = 1; i < blocks.length; i++) expect(blocks[i]!.block_header.raw_data.parentHash).toBe(blocks[i - 1]!.blockID);
  // Produced blocks build on the new branch.
  sim.produce(2);
  const top = await range(sim, head, head + 3);
  expect(top.map((b) => b.block_header.raw_data.number)).toEqual([head, head + 1, head + 2]);
  expect(top[1]!.block_header.raw_data.parentHash).toBe(top[0]!.blockID);
});
