// A fork of depth 3: the simulator replaces its newest three blocks with a longer branch that re-includes their
// transactions. The matcher notices the parent-hash mismatch, rolls back to the common ancestor, follows the new
// branch, and the re-included transfers keep their first events (no second event, no second delivery).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { blockWith, startMatcherBed, type MatcherBed } from "./matcher-bed.ts";
import { loadCheckpoint, recentBlocks } from "../../matcher/store.ts";

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
