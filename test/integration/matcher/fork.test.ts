// A fork of depth 3: the simulator replaces its newest three blocks with a longer branch that re-includes their
// transactions. The matcher notices the parent-hash mismatch, rolls back to the common ancestor, follows the new
// branch, and the re-included transfers keep their first events (no second event, no second delivery).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { blockWith, startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";
import { loadCheckpoint, recentBlocks } from "../../../matcher/store.ts";

const A = "TPH479jG91GcRbPr4pnx7bwdN47twUvuy8";
const B = "TYCrwuKFKhLsbuSY5Jpwd8LYdq6QU8d9J5";
const USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";

let t: MatcherBed;
beforeAll(async () => {
  t = await startMatcherBed({ chains: ["tron:mainnet"] });
});
afterAll(async () => {
  await t?.stop();
});

test("fork of depth 3 → the stream follows the new branch; re-included transfers make no second event", async () => {
  const sim = t.sims["tron:mainnet"]!;
  const sub = await t.subscribe("/fork");
  await t.watch(sub, "tron:mainnet", [A]);

  const ancestor = await blockWith(sim, [{ type: "trx", from: B, to: A, amount: 1 }]);
  const old = [];
  for (let i = 0; i < 3; i++) {
    old.push(await blockWith(sim, [{ type: "trx", from: B, to: A, amount: 10 + i }, { type: "trc20", from: A, to: B, amount: String(100 + i), contract: USDT }]));
  }
  await t.matcher!.waitForBlock("tron:mainnet", old[2]!.number);
  await t.bed.receiver.waitForCount("/fork", 7);
  const before = await t.events(sub);
  expect(before).toHaveLength(7);
  const firstIds = new Map(before.map((e) => {
    const p = JSON.parse(e.payloadJson) as { data: { txId: string; logIndex: number; blockHash: string } };
    return [`${p.data.txId}:${p.data.logIndex}`, { id: e.id, blockHash: p.data.blockHash }] as const;
  }));

  // The new branch: same parent (the ancestor), four blocks, the old transactions re-included, new ones added.
  const res = await fetch(`${sim.url}/sim/fork`, { method: "POST", body: JSON.stringify({ depth: 3, length: 4, reinclude: true }) });
  const fork = (await res.json()) as { ancestor: number; removed: string[]; added: string[] };
  expect(fork.ancestor).toBe(ancestor.number);
  expect(fork.removed).toEqual(old.map((b) => b.blockId));
  const fresh = await blockWith(sim, [{ type: "trx", from: B, to: A, amount: 999 }]);

  await t.matcher!.waitForBlock("tron:mainnet", fresh.number);
  // Follows the new branch: the checkpoint and the remembered ids are the node's canonical blocks now.
  const cp = await loadCheckpoint(t.matcher!.db, "tron:mainnet");
  expect(cp).toEqual({ number: fresh.number, blockId: fresh.blockId });
  const remembered = await recentBlocks(t.matcher!.db, "tron:mainnet", ancestor.number);
  for (const r of remembered) expect(r.blockId).toBe(sim.chain.byNumber(r.number)!.block.blockID);
  expect(remembered.map((r) => r.blockId)).toContain(fork.added[0]!);
  for (const gone of fork.removed) expect(remembered.map((r) => r.blockId)).not.toContain(gone);

  await t.bed.receiver.waitForCount("/fork", 8);
  const after = await t.events(sub);
  // 7 old transfers (each once, though now in other blocks) + the one new transfer.
  expect(after).toHaveLength(8);
  for (const e of after) {
    const p = JSON.parse(e.payloadJson) as { data: { txId: string; logIndex: number; blockHash: string } };
    const first = firstIds.get(`${p.data.txId}:${p.data.logIndex}`);
    if (first) {
      expect(e.id).toBe(first.id);
      expect(p.data.blockHash).toBe(first.blockHash);
    } else {
      expect(p.data.txId).toBe(fresh.txIds[0]!);
    }
  }
  const ids = t.bed.receiver.deliveries("/fork").map((d) => d.headers["webhook-id"]);
  expect(new Set(ids).size).toBe(8);
});

test("a fork whose replacement blocks are of the next UTC day → the re-included transfers keep their one event", async () => {
  const sim = t.sims["tron:mainnet"]!;
  const sub = await t.subscribe("/fork-midnight");
  await t.watch(sub, "tron:mainnet", [A]);
  // The simulator's clock a few seconds before the next UTC midnight: the first branch's blocks are of this day.
  const midnight = (Math.floor(sim.chain.now() / 86_400_000) + 1) * 86_400_000;
  sim.chain.clockOffsetMs += midnight - 10_000 - sim.chain.now();
  const ancestor = await blockWith(sim, [{ type: "trx", from: B, to: A, amount: 1 }]);
  const old = [];
  for (let i = 0; i < 2; i++) old.push(await blockWith(sim, [{ type: "trx", from: B, to: A, amount: 20 + i }]));
  expect(new Date(old[1]!.timestamp).toISOString().slice(0, 10)).toBe(new Date(midnight - 1).toISOString().slice(0, 10));
  await t.matcher!.waitForBlock("tron:mainnet", old[1]!.number);
  await t.bed.receiver.waitForCount("/fork-midnight", 3);
  const before = await t.events(sub);
  expect(before).toHaveLength(3);

  // The replacing branch is produced after midnight: its blocks, re-including the old transactions, are of the next day.
  const res = await fetch(`${sim.url}/sim/fork`, { method: "POST", body: JSON.stringify({ depth: 2, length: 3, reinclude: true, at: midnight + 1_000 }) });
  const fork = (await res.json()) as { ancestor: number; added: string[] };
  expect(fork.ancestor).toBe(ancestor.number);
  sim.chain.clockOffsetMs += midnight + 20_000 - sim.chain.now();
  const fresh = await blockWith(sim, [{ type: "trx", from: B, to: A, amount: 999 }]);
  await t.matcher!.waitForBlock("tron:mainnet", fresh.number);
  await t.bed.receiver.waitForCount("/fork-midnight", 4);

  const after = await t.events(sub);
  expect(after).toHaveLength(4);
  const byTx = (events: typeof after) =>
    new Map(events.map((e) => [(JSON.parse(e.payloadJson) as { data: { txId: string } }).data.txId, e.id] as const));
  const first = byTx(before);
  const now = byTx(after);
  for (const [txId, id] of first) expect([txId, now.get(txId)]).toEqual([txId, id]);
  expect(now.get(fresh.txIds[0]!)).toMatch(/^evt_/);
  // The matcher did read the re-included transfers in the next day's blocks (the stream is past them)…
  const reincluded = old.flatMap((b) => b.txIds);
  for (const tx of reincluded) expect(new Date(sim.chain.byTxId(tx)!.block.block_header.raw_data.timestamp).getTime()).toBeGreaterThanOrEqual(midnight);
  // …and every delivery is of one of the four events, each under its own webhook-id.
  await Bun.sleep(300);
  const ids = t.bed.receiver.deliveries("/fork-midnight").map((d) => d.headers["webhook-id"]);
  expect(new Set(ids).size).toBe(4);
  expect([...new Set(ids)].sort()).toEqual(after.map((e) => e.id).sort());
});
