// A fork seen late: while the matcher is down the simulator replaces the block holding a transfer with one that
// re-includes it, and the chain moves on past its expiration. On restart the head stream's first request is held
// back, so the solidified stream confirms the transfer from the new branch before the head stream rolls back the old
// block and records it as a pending drop. The drop must be settled by that earlier inclusion: one confirmed, never a
// failed / dropped beside it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { loadCheckpoint, loadPendingDrops } from "../../../matcher/store.ts";
import { blockWith, startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";
import { until } from "../../support/wait.ts";

const fresh = () => hexToBase58(`41${randomBytes(20).toString("hex")}`);
const CHAIN = "tron:mainnet" as const;
const LAG = 3;
const ALL = ["wallet.transfer.broadcasted", "wallet.transfer.confirmed", "wallet.transfer.failed"];

let t: MatcherBed;
beforeAll(async () => {
  t = await startMatcherBed({ chains: [CHAIN], sim: { solidLag: LAG } });
});
afterAll(async () => {
  await t?.stop();
});

type Payload = { kind: string; data: { txId: string; logIndex: number; internalIndex: number; blockHash: string; reason?: string } };

test("fork during downtime, head stream's first fetch delayed → a confirmed transfer is never also failed / dropped", async () => {
  const sim = t.sims[CHAIN]!;
  const D = fresh();
  const sub = await t.subscribe("/late", { events: ALL });
  await t.watch(sub, CHAIN, [D]);

  const old = await blockWith(sim, [{ type: "trx", from: fresh(), to: D, amount: 21 }]);
  const [above] = sim.produce(1);
  await t.matcher!.waitForBlock(CHAIN, above!.block.block_header.raw_data.number);
  await t.bed.receiver.waitForCount("/late", 1);
  await t.matcher!.close();

  // Down: both blocks are replaced (the transfer re-included at the same height), then the chain runs on past the
  // transfer's expiration and the new branch is solidified.
  const res = await fetch(`${sim.url}/sim/fork`, { method: "POST", body: JSON.stringify({ depth: 2, reinclude: true }) });
  const fork = (await res.json()) as { removed: string[]; added: string[] };
  expect(fork.removed).toEqual([old.blockId, above!.block.blockID]);
  await fetch(`${sim.url}/sim/produce`, { method: "POST", body: JSON.stringify({ count: 1, advanceMs: 61_000 }) });
  sim.produce(LAG + 2);

  // The head stream's first look at the head waits longer than the solidified stream waits for it (two requests: the
  // matcher's start-up probe of the node asks for the head too).
  sim.setFaults([{ path: "wallet/getnowblock", delayMs: 5_000, times: 2 }]);
  await t.startMatcher();
  await t.matcher!.waitForSolidified(CHAIN, old.number, 30_000);
  // The order this test is about: confirmed from the new branch while the head stream still stands on the old one.
  expect((await loadCheckpoint(t.matcher!.db, CHAIN))!.blockId).toBe(above!.block.blockID);
  // The head stream then rolls back the replaced blocks and resumes on the new branch.
  const head = sim.chain.head().block.block_header.raw_data.number;
  await t.matcher!.waitForBlock(CHAIN, head, 30_000);
  expect(sim.faultHits("wallet/getnowblock")).toBe(2);
  // More solidified blocks, each a chance to settle the pending drop of the old block.
  sim.produce(LAG + 2);
  const last = sim.chain.head().block.block_header.raw_data.number;
  await t.matcher!.waitForSolidified(CHAIN, last - LAG, 30_000);
  await until("no pending drop left", async () => ((await loadPendingDrops(t.matcher!.db, CHAIN)).length === 0 ? true : null), 10_000);

  // The deliverer's record (events are stored when the matcher hands them over, before its checkpoint moves).
  const got = (await t.events(sub)).map((e) => JSON.parse(e.payloadJson) as Payload);
  const kinds = got.filter((p) => p.data.txId === old.txIds[0]).map((p) => p.kind).sort();
  expect(kinds).toEqual(["wallet.transfer.broadcasted", "wallet.transfer.confirmed"]);
  const confirmed = got.find((p) => p.kind === "wallet.transfer.confirmed")!;
  expect(confirmed.data.blockHash).toBe(fork.added[0]!);
}, 90_000);
