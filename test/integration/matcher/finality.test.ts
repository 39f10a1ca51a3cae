// Where finality comes from when the node's solidified head cannot be used: a node without the solidity API
// (/walletsolidity/* answer 404) makes it the head minus 19 blocks, and MATCHER_CONFIRMATIONS overrides even a node
// that has one.
import { afterEach, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { blockWith, startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";

const CHAIN = "tron:mainnet" as const;
const fresh = () => hexToBase58(`41${randomBytes(20).toString("hex")}`);

let t: MatcherBed | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

/** A transfer to a watched address: not confirmed while fewer than `n` blocks are on top of it, confirmed at `n`. */
async function expectConfirmedAfter(bed: MatcherBed, path: string, n: number): Promise<void> {
  const sim = bed.sims[CHAIN]!;
  const to = fresh();
  const sub = await bed.subscribe(path, { events: ["wallet.transfer.confirmed"] });
  await bed.watch(sub, CHAIN, [to]);
  const block = await blockWith(sim, [{ type: "trx", from: fresh(), to, amount: 1 }]);
  await bed.matcher!.waitForBlock(CHAIN, block.number);
  for (let on = 1; on < n; on++) {
    const [b] = sim.produce(1);
    await bed.matcher!.waitForBlock(CHAIN, b!.block.block_header.raw_data.number);
  }
  // The solidified stream had its chance at every head so far (it follows the head stream's polls).
  await Bun.sleep(500);
  expect(bed.bed.receiver.count(path)).toBe(0);
  expect(bed.matcher!.solidProgress(CHAIN)?.number ?? 0).toBeLessThan(block.number);
  sim.produce(1);
  await bed.matcher!.waitForSolidified(CHAIN, block.number);
  await bed.bed.receiver.waitForCount(path, 1);
  const [p] = bed.bed.receiver.deliveries(path).map((d) => JSON.parse(d.body) as { kind: string; data: { txId: string } });
  expect(p!.kind).toBe("wallet.transfer.confirmed");
  expect(p!.data.txId).toBe(block.txIds[0]!);
}

test("a node without the solidity API (404): a transfer is confirmed when the head is 19 blocks past its block", async () => {
  t = await startMatcherBed({ chains: [CHAIN], sim: { solidLag: 2 }, matcher: false });
  t.sims[CHAIN]!.chain.solidityApi = false;
  // Blocks below the head minus 19 exist, as on a real node (the simulator's chain starts at its first block).
  t.sims[CHAIN]!.produce(25);
  await t.startMatcher();
  await expectConfirmedAfter(t, "/no-solidity", 19);
}, 120_000);

test("MATCHER_CONFIRMATIONS overrides the node's solidified head", async () => {
  t = await startMatcherBed({ chains: [CHAIN], sim: { solidLag: 2 }, env: { MATCHER_CONFIRMATIONS: "5" }, matcher: false });
  t.sims[CHAIN]!.produce(10);
  await t.startMatcher();
  await expectConfirmedAfter(t, "/confirmations", 5);
}, 120_000);
