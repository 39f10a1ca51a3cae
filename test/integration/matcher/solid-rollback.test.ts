// A solidified checkpoint on a dead block: with finality counted (MATCHER_CONFIRMATIONS=1) a fork deeper than that
// replaces the block the solidified stream last confirmed. The stream must walk back to the common ancestor, as the
// head stream does, and go on along the node's chain — not fail every step until someone edits its checkpoint.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { loadSolidifiedCheckpoint } from "../../../matcher/store.ts";
import { startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";

const CHAIN = "tron:mainnet" as const;

let t: MatcherBed;
beforeAll(async () => {
  // The simulator's own solidified head trails by 10, so it allows a fork of depth 3.
  t = await startMatcherBed({
    chains: [CHAIN],
    sim: { solidLag: 10, recorded: false, startNumber: 43_000_000 },
    env: { MATCHER_CONFIRMATIONS: "1" },
    matcher: false,
  });
  t.sims[CHAIN]!.produce(12);
  await t.startMatcher();
});
afterAll(async () => {
  await t?.stop();
});

test("a fork replaces the solidified checkpoint's block → the stream walks back to the ancestor and follows the node", async () => {
  const sim = t.sims[CHAIN]!;
  const headNumber = () => sim.chain.head().block.block_header.raw_data.number;
  // Both streams have started (the solidified one just above its finality) before the blocks it will confirm.
  await t.matcher!.waitForBlock(CHAIN, headNumber());
  sim.produce(3);
  const confirmed = await t.matcher!.waitForSolidified(CHAIN, headNumber() - 1);
  expect(confirmed.blockId).toBe(sim.chain.byNumber(confirmed.number)!.block.blockID);

  // Depth 3: the checkpoint's block (head − 1) is replaced.
  const res = await fetch(`${sim.url}/sim/fork`, { method: "POST", body: JSON.stringify({ depth: 3, length: 4 }) });
  const fork = (await res.json()) as { ancestor: number; removed: string[] };
  expect(fork.removed).toContain(confirmed.blockId);
  sim.produce(2);

  const target = headNumber() - 1;
  await t.matcher!.waitForSolidified(CHAIN, target, 30_000);
  const cp = (await loadSolidifiedCheckpoint(t.matcher!.db, CHAIN))!;
  expect(cp.number).toBeGreaterThanOrEqual(target);
  expect(cp.blockId).toBe(sim.chain.byNumber(cp.number)!.block.blockID);
}, 90_000);
