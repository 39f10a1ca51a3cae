// One active matcher per chain: a second replica waits on the chain's lease instead of streaming too, and takes
// over when the first stops, from the first one's checkpoint, with no transfer missed and no event doubled.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { loadConfig } from "../../../common/config.ts";
import { inProcessTransport } from "../../../common/rpc.ts";
import { createMatcher, type MatcherHandle } from "../../../matcher/index.ts";
import { blockWith, startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";

const A = "TPH479jG91GcRbPr4pnx7bwdN47twUvuy8";
const B = "TYCrwuKFKhLsbuSY5Jpwd8LYdq6QU8d9J5";

let t: MatcherBed;
const replicas: MatcherHandle[] = [];
beforeAll(async () => {
  t = await startMatcherBed({ chains: ["tron:mainnet"], matcher: false });
});
afterAll(async () => {
  for (const r of replicas) await r.close().catch(() => {});
  await t?.stop();
});

test("a second replica waits for the lease, then takes over where the first stopped", async () => {
  const sim = t.sims["tron:mainnet"]!;
  const sub = await t.subscribe("/lease");
  await t.watch(sub, "tron:mainnet", [A]);
  const start = () =>
    createMatcher(loadConfig(t.bed.env), {
      deliverer: inProcessTransport(t.bed.deliverer!.routes),
      nodeUrls: { "tron:mainnet": sim.url },
      stream: { leaseRetryMs: 100 },
    });
  const first = await start();
  replicas.push(first);
  const b1 = await blockWith(sim, [{ type: "trx", from: B, to: A, amount: 1 }]);
  await first.waitForBlock("tron:mainnet", b1.number);
  const second = await start();
  replicas.push(second);

  const b2 = await blockWith(sim, [{ type: "trx", from: B, to: A, amount: 2 }]);
  await first.waitForBlock("tron:mainnet", b2.number);
  await Bun.sleep(300);
  // Only the lease holder streams.
  expect(second.progress("tron:mainnet")).toBeNull();

  await first.close();
  const b3 = await blockWith(sim, [{ type: "trx", from: B, to: A, amount: 3 }]);
  const p = await second.waitForBlock("tron:mainnet", b3.number, 20_000);
  expect(p.number).toBeGreaterThanOrEqual(b3.number);
  const events = await t.events(sub);
  const txIds = events.map((e) => (JSON.parse(e.payloadJson) as { data: { txId: string } }).data.txId).sort();
  expect(txIds).toEqual([...b1.txIds, ...b2.txIds, ...b3.txIds].sort());
});
