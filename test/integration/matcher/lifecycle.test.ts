// The transfer lifecycle end to end through the simulator (solidified head 3 blocks below the head): broadcasted
// from the head stream, confirmed only once the solidified head reaches the block, failed (REVERT) from a
// solidified block, confirmed-only subscriptions, and forks above the solidified head — a re-included transfer
// gets one broadcasted and one confirmed, one never re-included ends as one failed / dropped and is never confirmed.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { blockWith, startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";

// Fresh addresses: no recorded or generated block touches them.
const fresh = () => hexToBase58(`41${randomBytes(20).toString("hex")}`);
const [A, B, C, D] = [fresh(), fresh(), fresh(), fresh()] as [string, string, string, string];
const USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const CHAIN = "tron:mainnet" as const;
const LAG = 3;
const ALL = ["wallet.transfer.broadcasted", "wallet.transfer.confirmed", "wallet.transfer.failed"];

type Payload = { id: string; kind: string; subscriptionId: string; data: Record<string, unknown> & { txId: string; blockNumber: number; blockHash: string } };

let t: MatcherBed;
beforeAll(async () => {
  t = await startMatcherBed({ chains: [CHAIN], sim: { solidLag: LAG } });
});
afterAll(async () => {
  await t?.stop();
});

const payloads = (path: string) => t.bed.receiver.deliveries(path).map((d) => JSON.parse(d.body) as Payload);
const ofKind = (path: string, kind: string) => payloads(path).filter((p) => p.kind === `wallet.transfer.${kind}`);

test("confirmed once the solidified head reaches the block, not before; a confirmed-only subscription gets no broadcasted", async () => {
  const sim = t.sims[CHAIN]!;
  const all = await t.subscribe("/life-all", { events: ALL });
  await t.watch(all, CHAIN, [A]);
  const confirmedOnly = await t.subscribe("/life-confirmed", { events: ["wallet.transfer.confirmed"] });
  await t.watch(confirmedOnly, CHAIN, [A]);

  const block = await blockWith(sim, [{ type: "trx", from: B, to: A, amount: 5_000_000 }]);
  await t.matcher!.waitForBlock(CHAIN, block.number);
  await t.bed.receiver.waitForCount("/life-all", 1);
  expect(ofKind("/life-all", "broadcasted")).toHaveLength(1);

  // Two blocks later the solidified head is still one below the transfer's block: nothing final yet.
  sim.produce(LAG - 1);
  await t.matcher!.waitForSolidified(CHAIN, block.number - 1);
  await Bun.sleep(300);
  expect(ofKind("/life-all", "confirmed")).toHaveLength(0);
  expect(t.bed.receiver.deliveries("/life-confirmed")).toHaveLength(0);
  expect(t.matcher!.solidProgress(CHAIN)!.number).toBeLessThan(block.number);

  // One more: the block is solidified.
  sim.produce(1);
  const solid = await t.matcher!.waitForSolidified(CHAIN, block.number);
  await t.bed.receiver.waitForCount("/life-all", 2);
  await t.bed.receiver.waitForCount("/life-confirmed", 1);
  const [confirmed] = ofKind("/life-all", "confirmed");
  expect(confirmed!.data).toMatchObject({
    chainId: CHAIN,
    blockNumber: block.number,
    blockHash: block.blockId,
    blockTimestamp: block.timestamp,
    txId: block.txIds[0],
    logIndex: -1,
    internalIndex: -1,
    from: B,
    to: A,
    amount: "5000000",
    matchedAddresses: [{ chainId: CHAIN, address: A, role: "to" }],
  });
  expect(confirmed!.data.solidifiedBlockNumber).toBeGreaterThanOrEqual(block.number);
  expect(confirmed!.data.solidifiedBlockNumber).toBeLessThanOrEqual(solid.solidifiedHead);
  expect(confirmed!.id).not.toBe(ofKind("/life-all", "broadcasted")[0]!.id);
  const only = payloads("/life-confirmed");
  expect(only.map((p) => p.kind)).toEqual(["wallet.transfer.confirmed"]);
  expect(only[0]!.data.txId).toBe(block.txIds[0]!);
  for (const d of [...t.bed.receiver.deliveries("/life-all"), ...t.bed.receiver.deliveries("/life-confirmed")]) expect(d.verified).toBe(true);
});

test("a REVERTed USDT transfer: no broadcasted, one failed (reason REVERT) once its block is solidified, never confirmed", async () => {
  const sim = t.sims[CHAIN]!;
  const sub = await t.subscribe("/life-failed", { events: ALL });
  await t.watch(sub, CHAIN, [C]);
  const block = await blockWith(sim, [
    { type: "trc20", from: D, to: C, amount: "99", contract: USDT, result: "REVERT" },
    { type: "trx", from: C, to: D, amount: 7 },
  ]);
  await t.matcher!.waitForBlock(CHAIN, block.number);
  await t.bed.receiver.waitForCount("/life-failed", 1);
  sim.produce(LAG);
  await t.matcher!.waitForSolidified(CHAIN, block.number);
  await t.bed.receiver.waitForCount("/life-failed", 3);
  await Bun.sleep(300);
  const got = payloads("/life-failed");
  expect(got.map((p) => `${p.kind}:${p.data.txId}`).sort()).toEqual(
    [`wallet.transfer.broadcasted:${block.txIds[1]}`, `wallet.transfer.confirmed:${block.txIds[1]}`, `wallet.transfer.failed:${block.txIds[0]}`].sort(),
  );
  const failed = got.find((p) => p.kind === "wallet.transfer.failed")!;
  expect(failed.data).toMatchObject({ reason: "REVERT", from: D, to: C, amount: "99", blockNumber: block.number, blockHash: block.blockId, logIndex: -1 });
  expect(failed.data.solidifiedBlockNumber).toBeGreaterThanOrEqual(block.number);
});

test("a fork above the solidified head: the re-included transfer gets one broadcasted and one confirmed; the other ends as one failed / dropped", async () => {
  const sim = t.sims[CHAIN]!;
  const sub = await t.subscribe("/life-fork", { events: ALL });
  await t.watch(sub, CHAIN, [D]);
  const old = await blockWith(sim, [
    { type: "trx", from: B, to: D, amount: 11 },
    { type: "trc20", from: B, to: D, amount: "12", contract: USDT },
  ]);
  const [kept, lost] = old.txIds as [string, string];
  await t.matcher!.waitForBlock(CHAIN, old.number);
  await t.bed.receiver.waitForCount("/life-fork", 2);

  // The block is replaced by one holding only `kept`; a block on top shows the head stream the new branch.
  const res = await fetch(`${sim.url}/sim/fork`, { method: "POST", body: JSON.stringify({ depth: 1, reinclude: [kept] }) });
  expect(res.status).toBe(200);
  const fork = (await res.json()) as { ancestor: number; removed: string[]; added: string[] };
  expect(fork.removed).toEqual([old.blockId]);
  const [next] = sim.produce(1);
  await t.matcher!.waitForBlock(CHAIN, next!.block.block_header.raw_data.number);
  expect(t.matcher!.progress(CHAIN)!.blockId).toBe(next!.block.blockID);

  // Past `lost`'s expiration (60 s after it was made), then solidify everything.
  await fetch(`${sim.url}/sim/produce`, { method: "POST", body: JSON.stringify({ count: 1, advanceMs: 61_000 }) });
  sim.produce(LAG + 1);
  const head = sim.chain.head().block.block_header.raw_data.number;
  await t.matcher!.waitForSolidified(CHAIN, head - LAG);
  await t.bed.receiver.waitForCount("/life-fork", 4);
  await Bun.sleep(500);

  const got = payloads("/life-fork");
  expect(got.map((p) => `${p.kind}:${p.data.txId}`).sort()).toEqual(
    [
      `wallet.transfer.broadcasted:${kept}`,
      `wallet.transfer.broadcasted:${lost}`,
      `wallet.transfer.confirmed:${kept}`,
      `wallet.transfer.failed:${lost}`,
    ].sort(),
  );
  const confirmed = got.find((p) => p.kind === "wallet.transfer.confirmed")!;
  expect(confirmed.data.blockHash).toBe(fork.added[0]!);
  expect(confirmed.data.blockNumber).toBe(old.number);
  const dropped = got.find((p) => p.kind === "wallet.transfer.failed")!;
  expect(dropped.data).toMatchObject({ reason: "dropped", blockNumber: old.number, blockHash: old.blockId, from: B, to: D, amount: "12", logIndex: 0 });
  expect(dropped.data.solidifiedBlockNumber).toBeGreaterThan(old.number);
  // Each delivered once.
  const ids = t.bed.receiver.deliveries("/life-fork").map((d) => d.headers["webhook-id"]);
  expect(new Set(ids).size).toBe(4);
});
