// The matcher as its own process, SIGKILLed twice while blocks keep coming — once just after the head stream's
// checkpoint moved, once just after the solidified stream's, so the two checkpoints stand apart at each kill — and
// restarted each time: every transfer of a solidified block touching a watched address has exactly one
// confirmed (successful) or failed (REVERT) event — none lost, none doubled. The expected set is computed from the
// simulator's blocks, independently of the matcher's streams.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { decodeBlock } from "../../../matcher/decode.ts";
import { tryAcquireChainLease } from "../../../matcher/lease.ts";
import {
  advanceCheckpoint,
  advanceSolidifiedCheckpoint,
  loadCheckpoint,
  loadSolidifiedCheckpoint,
  type MatcherDb,
} from "../../../matcher/store.ts";
import type { MatcherBed } from "../../support/matcher-bed.ts";
import { startMatcherProcessBed, type MatcherProcessBed } from "../../support/matcher-process.ts";
import { until } from "../../support/wait.ts";

const CHAIN = "tron:mainnet" as const;
const LAG = 3;
let p: MatcherProcessBed;
let t: MatcherBed;
let db: MatcherDb;

beforeAll(async () => {
  p = await startMatcherProcessBed(CHAIN, { sim: { txPerBlock: 20, poolSize: 100, recorded: false, startNumber: 41_000_000, solidLag: LAG } });
  ({ t, db } = p);
});
afterAll(async () => {
  await p?.stop();
});

const headAt = async () => (await loadCheckpoint(db, CHAIN))!.number;
const solidAt = async () => (await loadSolidifiedCheckpoint(db, CHAIN))!.number;

test("SIGKILL between the two streams' checkpoints, twice → no confirmed or failed event lost or doubled", async () => {
  const sim = t.sims[CHAIN]!;
  const sub = await t.subscribe("/crash-final", { events: ["wallet.transfer.confirmed", "wallet.transfer.failed"] });
  const watched = sim.poolAddresses(25);
  await t.watch(sub, CHAIN, watched);

  // Both streams start after the same block, so the expected set has a clear beginning.
  sim.produce(LAG + 2);
  const start = sim.chain.head().block;
  const startHead = start.block_header.raw_data.number;
  {
    const lease = (await tryAcquireChainLease(db.$client, CHAIN))!;
    await advanceCheckpoint(lease, [{ number: startHead, blockId: start.blockID }]);
    await advanceSolidifiedCheckpoint(lease, { number: startHead, blockId: start.blockID }, []);
    await lease.release();
  }

  let proc = p.spawn();
  let produced = 0;
  const producer = setInterval(() => {
    // Every third block also carries a reverted USDT transfer from a watched address (a failed event to make).
    if (produced++ % 3 === 0) sim.chain.enqueue([{ type: "trc20", from: watched[produced % watched.length]!, to: watched[0]!, amount: "5", result: "REVERT" }]);
    sim.produce(1);
  }, 120);
  try {
    for (let kill = 0; kill < 2; kill++) {
      const which = kill % 2 === 0 ? headAt : solidAt;
      const before = await which();
      // Kill right after this stream's checkpoint moved: the other's stands elsewhere.
      await until("a checkpoint to move before the kill", async () => ((await which()) > before + 1 ? true : null), 60_000, 5);
      proc.kill("SIGKILL");
      await proc.exited;
      await Bun.sleep(300); // blocks pile up while it is down
      proc = p.spawn();
    }
    // On a quiet machine the kills come quickly: keep the blocks coming until the run spans enough of them.
    await until("enough blocks", async () => (sim.chain.head().block.block_header.raw_data.number > startHead + LAG + 30 ? true : null));
  } finally {
    clearInterval(producer);
  }
  const finalHead = sim.chain.head().block.block_header.raw_data.number;
  const finalSolid = finalHead - LAG;
  await until("the solidified stream to reach the solidified head", async () => ((await solidAt()) >= finalSolid ? true : null));
  proc.kill("SIGTERM");
  await proc.exited;

  // Independently: every transfer of the solidified blocks after the start that touches a watched address.
  const watchedSet = new Set(watched);
  const expected = new Set<string>();
  for (let n = startHead + 1; n <= finalSolid; n++) {
    const stored = sim.chain.byNumber(n)!;
    for (const tr of decodeBlock(stored.block, stored.infos)) {
      if (!watchedSet.has(tr.from) && !watchedSet.has(tr.to)) continue;
      const kind = tr.result === "SUCCESS" ? "wallet.transfer.confirmed" : "wallet.transfer.failed";
      expected.add(`${kind}:${tr.txId}:${tr.logIndex}:${tr.internalIndex}`);
    }
  }
  expect(finalSolid - startHead).toBeGreaterThan(20);
  expect([...expected].filter((k) => k.startsWith("wallet.transfer.failed")).length).toBeGreaterThan(3);
  expect(expected.size).toBeGreaterThan(20);

  const events = await t.events(sub);
  const keys = events.map((e) => {
    const p = JSON.parse(e.payloadJson) as { kind: string; data: { txId: string; logIndex: number; internalIndex: number; blockNumber: number } };
    return `${p.kind}:${p.data.txId}:${p.data.logIndex}:${p.data.internalIndex}`;
  });
  expect(new Set(keys).size).toBe(keys.length); // no duplicate event
  expect(new Set(keys)).toEqual(expected); // none lost, none extra
}, 240_000);
