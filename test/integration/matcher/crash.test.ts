// The matcher as its own process (`bun matcher/main.ts`), SIGKILLed three times while blocks keep coming, restarted
// each time: every transfer that touched a watched address has exactly one event — none missed, none doubled.
// The expected set is computed independently of the matcher's stream from the simulator's blocks.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { decodeBlock } from "../../../matcher/decode.ts";
import { loadCheckpoint, type MatcherDb } from "../../../matcher/store.ts";
import type { MatcherBed } from "../../support/matcher-bed.ts";
import { startMatcherProcessBed, type MatcherProcessBed } from "../../support/matcher-process.ts";
import { until } from "../../support/wait.ts";

let p: MatcherProcessBed;
let t: MatcherBed;
let db: MatcherDb;

beforeAll(async () => {
  p = await startMatcherProcessBed("tron:mainnet", { sim: { txPerBlock: 40, poolSize: 100, recorded: false, startNumber: 40_000_000 } });
  ({ t, db } = p);
});
afterAll(async () => {
  await p?.stop();
});

test("SIGKILL mid-stream and restart, three times → no transfer missed, no duplicate event", async () => {
  const sim = t.sims["tron:mainnet"]!;
  const sub = await t.subscribe("/crash");
  const watched = sim.poolAddresses(25);
  await t.watch(sub, "tron:mainnet", watched);

  const startHead = sim.chain.head().block.block_header.raw_data.number;
  let proc = p.spawn();
  // The first start begins at the node's head.
  const first = await until("the first checkpoint", () => loadCheckpoint(db, "tron:mainnet"));
  expect(first.number).toBe(startHead);

  const producer = setInterval(() => sim.produce(1), 80);
  try {
    for (let kill = 0; kill < 3; kill++) {
      const cp = (await loadCheckpoint(db, "tron:mainnet"))!.number;
      // Let it make progress, then kill it without warning, mid-stream.
      await until("progress before the kill", async () => ((await loadCheckpoint(db, "tron:mainnet"))!.number > cp + 2 ? true : null));
      await Bun.sleep(Math.floor(Math.random() * 150));
      proc.kill("SIGKILL");
      await proc.exited;
      await Bun.sleep(300); // blocks pile up while it is down
      proc = p.spawn();
    }
  } finally {
    clearInterval(producer);
  }
  const finalHead = sim.chain.head().block.block_header.raw_data.number;
  await until("the matcher to reach the head", async () => ((await loadCheckpoint(db, "tron:mainnet"))!.number >= finalHead ? true : null));
  proc.kill("SIGTERM");
  await proc.exited;

  // Independently: every transfer of blocks startHead..finalHead that touches a watched address.
  const watchedSet = new Set(watched);
  const expected = new Set<string>();
  for (let n = startHead; n <= finalHead; n++) {
    const stored = sim.chain.byNumber(n)!;
    for (const tr of decodeBlock(stored.block, stored.infos)) {
      // The head stream broadcasts successful transfers; zero-value ones are dropped by default.
      if (tr.result !== "SUCCESS" || tr.amount === "0") continue;
      if (watchedSet.has(tr.from) || watchedSet.has(tr.to)) expected.add(`${tr.txId}:${tr.logIndex}`);
    }
  }
  expect(finalHead - startHead).toBeGreaterThan(20);
  expect(expected.size).toBeGreaterThan(50);

  const events = await t.events(sub);
  const keys = events.map((e) => {
    const p = JSON.parse(e.payloadJson) as { data: { txId: string; logIndex: number } };
    return `${p.data.txId}:${p.data.logIndex}`;
  });
  expect(new Set(keys).size).toBe(keys.length); // no duplicate event
  expect(new Set(keys)).toEqual(expected); // none missed, none extra
}, 120_000);
