// Two nodes behind one URL that disagree: one still on a branch a fork replaced answers the full-node API, the other
// (on the canonical chain) the solidity API — then every other request. The solidified stream reads its blocks from
// the former and its finality from the latter; runs end below the solidified head (two blocks per run), so only a
// check of every run's newest block against the node's solidified view keeps a replaced block from being confirmed.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { loadSolidifiedCheckpoint } from "../../../matcher/store.ts";
import { blockWith, startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";
import { until } from "../../support/wait.ts";

const fresh = () => hexToBase58(`41${randomBytes(20).toString("hex")}`);
const CHAIN = "tron:mainnet" as const;
const LAG = 6;

let t: MatcherBed;
beforeAll(async () => {
  t = await startMatcherBed({
    chains: [CHAIN],
    sim: { solidLag: LAG, recorded: false, startNumber: 44_000_000 },
    stream: { batchSize: 2 },
    matcher: false,
  });
  t.sims[CHAIN]!.produce(LAG + 4);
  await t.startMatcher();
});
afterAll(async () => {
  await t?.stop();
});

type Payload = { kind: string; data: { txId: string; blockNumber: number; blockHash: string } };

test("nodes on two branches behind one URL → no confirmed event for a block off the canonical chain", async () => {
  const sim = t.sims[CHAIN]!;
  const headNumber = () => sim.chain.head().block.block_header.raw_data.number;
  const D = fresh();
  const sub = await t.subscribe("/canonical", { events: ["wallet.transfer.confirmed"] });
  await t.watch(sub, CHAIN, [D]);
  await t.matcher!.waitForBlock(CHAIN, headNumber());
  sim.produce(1);
  await t.matcher!.waitForSolidified(CHAIN, sim.chain.solid().block.block_header.raw_data.number, 60_000);

  // X's block and three above it are replaced by a branch without X; the node that stayed on the old branch keeps
  // answering the full-node API.
  const x = await blockWith(sim, [{ type: "trx", from: fresh(), to: D, amount: 4 }]);
  sim.produce(3);
  await t.matcher!.waitForBlock(CHAIN, headNumber());
  const res = await fetch(`${sim.url}/sim/fork`, { method: "POST", body: JSON.stringify({ depth: 4, reinclude: false, keepReplaced: true }) });
  const fork = (await res.json()) as { ancestor: number; removed: string[] };
  expect(fork.removed[0]).toBe(x.blockId);
  sim.alternate("wallet");
  sim.produce(12);
  const canonical = async () => {
    const events = (await t.events(sub)).map((e) => JSON.parse(e.payloadJson) as Payload);
    for (const e of events) expect(e.data.blockHash).toBe(sim.chain.byNumber(e.data.blockNumber)!.block.blockID);
    expect(events.map((e) => e.data.txId)).not.toContain(x.txIds[0]!);
    const cp = (await loadSolidifiedCheckpoint(t.matcher!.db, CHAIN))!;
    expect(cp.blockId).toBe(sim.chain.byNumber(cp.number)!.block.blockID);
  };
  // The stream passes X's height (wrongly) or checks its runs against the solidified view several times.
  await until(
    "the solidified stream to check its runs",
    async () => ((t.matcher!.solidProgress(CHAIN)?.number ?? 0) > x.number || sim.served("walletsolidity/getblock") >= 3 ? true : null),
    30_000,
  );
  await canonical();

  // Then the two nodes answer every other request.
  sim.alternate("alternate");
  sim.produce(4);
  const asked = sim.served("walletsolidity/getblock");
  await until("more checks", async () => (sim.served("walletsolidity/getblock") >= asked + 3 ? true : null), 30_000);
  await canonical();

  // One node again: the stream follows the canonical chain to the solidified head.
  sim.alternate("off");
  sim.produce(1);
  await t.matcher!.waitForSolidified(CHAIN, sim.chain.solid().block.block_header.raw_data.number, 30_000);
  await canonical();
}, 180_000);
