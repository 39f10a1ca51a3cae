// The node's solidity API failing without being absent: 429s and a request that times out on
// /walletsolidity/getnowblock must not make finality the head minus 19 (only a node without that API — 404 — may
// count confirmations). The stream retries with backoff and confirms nothing above the node's real solidified head,
// which here trails the head by 30 blocks.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { blockWith, startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";
import { until } from "../../support/wait.ts";

const fresh = () => hexToBase58(`41${randomBytes(20).toString("hex")}`);
const CHAIN = "tron:mainnet" as const;
const LAG = 30;
const SOLIDITY = "walletsolidity/getnowblock";

let t: MatcherBed;
beforeAll(async () => {
  t = await startMatcherBed({ chains: [CHAIN], sim: { solidLag: LAG, recorded: false, startNumber: 42_000_000 }, matcher: false });
  t.sims[CHAIN]!.produce(LAG + 5);
  await t.startMatcher();
});
afterAll(async () => {
  await t?.stop();
});

type Payload = { kind: string; data: { txId: string; blockNumber: number } };

test("429s and a timeout on the solidity API → nothing confirmed above the node's solidified head", async () => {
  const sim = t.sims[CHAIN]!;
  const solidHead = () => sim.chain.solid().block.block_header.raw_data.number;
  const D = fresh();
  const sub = await t.subscribe("/solidity-faults", { events: ["wallet.transfer.confirmed"] });
  await t.watch(sub, CHAIN, [D]);
  // The stream starts just above the solidified head: one block more gives it one to confirm.
  sim.produce(1);
  await t.matcher!.waitForSolidified(CHAIN, solidHead());

  // From now on the solidity API answers 429. The transfer's block ends 25 below the head: within the head minus
  // 19, still 5 above the solidified head.
  sim.setFaults([{ path: SOLIDITY, status: 429 }]);
  const block = await blockWith(sim, [{ type: "trx", from: fresh(), to: D, amount: 3 }]);
  sim.produce(25);
  const head = sim.chain.head().block.block_header.raw_data.number;
  await t.matcher!.waitForBlock(CHAIN, head);
  expect(block.number).toBeGreaterThan(solidHead());
  expect(block.number).toBeLessThanOrEqual(head - 19);
  const confirmedAbove = async () =>
    (await t.events(sub)).map((e) => JSON.parse(e.payloadJson) as Payload).filter((p) => p.data.blockNumber > solidHead());
  // Several 429s met (or, wrongly, something confirmed meanwhile).
  await until("several 429s", async () => (sim.faultHits(SOLIDITY) >= 3 || (await confirmedAbove()).length > 0 ? true : null), 30_000);
  expect(await confirmedAbove()).toEqual([]);
  expect(t.matcher!.solidProgress(CHAIN)!.number).toBeLessThanOrEqual(solidHead());

  // Then one request held past the client's timeout; after it the API answers. The solidified head moves up to
  // one block below the transfer's: the stream follows it there, and no further.
  sim.setFaults([{ path: SOLIDITY, delayMs: 11_000, times: 1 }]);
  const before = sim.faultHits(SOLIDITY);
  await until("the held request", async () => (sim.faultHits(SOLIDITY) > before ? true : null), 30_000);
  sim.produce(block.number - 1 - solidHead());
  await t.matcher!.waitForSolidified(CHAIN, block.number - 1, 30_000);
  expect(await confirmedAbove()).toEqual([]);
  expect(t.matcher!.solidProgress(CHAIN)!.number).toBe(block.number - 1);

  // One more block solidifies the transfer's.
  sim.produce(1);
  await t.matcher!.waitForSolidified(CHAIN, block.number, 30_000);
  const got = (await t.events(sub)).map((e) => JSON.parse(e.payloadJson) as Payload);
  expect(got.map((p) => p.data.txId)).toEqual([block.txIds[0]!]);
  expect(await confirmedAbove()).toEqual([]);
}, 120_000);
