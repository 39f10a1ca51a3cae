// `bun run bench conditions`: what match conditions cost the matcher per block, pure CPU, each figure beside its
// baseline measured in this run on the same inputs.
// 1. buildEvents over a 300-transfer block (45% USDT, the rest TRX and TRC-10) whose addresses are watched by 3
//    subscriptions each: every watcher with the default conditions (baseline: what every subscription cost before
//    conditions existed, plus one cached check) beside every watcher with 3 assets, a minAmount and one direction.
// 2. The check itself, per (watcher, role) of every transfer: rolePasses beside the kind check buildEvents already
//    made for each watcher (`events.includes`), the cheapest test it runs.
// 3. Reading the conditions out of one block's lookup reply (1,000 watcher metas): decodeMatch's per-text cache
//    beside a JSON.parse of every watcher's text on every block, which is what the cache saves.
import { randomBytes } from "node:crypto";
import { decodeMatch, defaultMatch, encodeMatch, type MatchConditions } from "../common/match-conditions.ts";
import { hexToBase58 } from "../common/tron-address.ts";
import type { Watcher } from "../common/watch-index/reader.ts";
import type { DecodedTransfer } from "../matcher/decode.ts";
import { rolePasses } from "../matcher/conditions.ts";
import { BROADCASTED } from "../common/contract/index.ts";
import { buildEvents } from "../matcher/match.ts";

const ROUNDS = 9;
const BLOCKS = 200;
const TX_PER_BLOCK = 300;
const USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function measure(label: string, unit: string, perRound: number, ours: () => void, baseline: () => void, baselineName: string): void {
  ours();
  baseline();
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    let t = performance.now();
    ours();
    a.push(performance.now() - t);
    t = performance.now();
    baseline();
    b.push(performance.now() - t);
  }
  const us = (ms: number) => ((ms * 1000) / perRound).toFixed(2).padStart(8);
  console.log(`${label.padEnd(44)} ${us(median(a))} µs/${unit}   ${baselineName}: ${us(median(b))} µs/${unit}   ×${(median(a) / median(b)).toFixed(2)}`);
}

export default function main(): void {
  const pool = Array.from({ length: 2_000 }, () => hexToBase58(`41${randomBytes(20).toString("hex")}`));
  const pick = () => pool[Math.floor(Math.random() * pool.length)]!;
  const blocks: DecodedTransfer[][] = Array.from({ length: BLOCKS }, () =>
    Array.from({ length: TX_PER_BLOCK }, (_, i) => {
      const r = Math.random();
      const standard = r < 0.45 ? "TRC20" : r < 0.9 ? "TRX" : "TRC10";
      return {
        txId: randomBytes(32).toString("hex"),
        logIndex: standard === "TRC20" ? 0 : -1,
        internalIndex: -1,
        from: pick(),
        to: pick(),
        amount: String(Math.floor(Math.random() * 10_000_000_000) * (i % 20 === 0 ? 0 : 1)),
        standard,
        contract: standard === "TRC20" ? USDT : null,
        tokenId: standard === "TRC10" ? "1002000" : null,
        fee: "0",
        memo: null,
        result: "SUCCESS",
        expirationMs: 0,
      } satisfies DecodedTransfer;
    }),
  );
  const conditions: MatchConditions = {
    assets: [
      { standard: "TRC20", contract: USDT, minAmount: "1000000" },
      { standard: "TRX", minAmount: "5000000" },
      { standard: "TRC10", tokenId: "1002001", minAmount: "0" },
    ],
    directions: ["incoming"],
    includeZeroValue: false,
  };
  // As the watch index hands them out: one decoded object per distinct text.
  const withMatch = (m: MatchConditions) => {
    const shared = decodeMatch(encodeMatch(m));
    const watched = new Map<string, Watcher[]>();
    pool.forEach((address, i) =>
      watched.set(
        address,
        [0, 1, 2].map((k) => ({ subscriptionId: `sub_${(i + k) % 50}`, keyId: "key_1", active: true, events: [BROADCASTED], match: shared })),
      ),
    );
    return watched;
  };
  const plain = withMatch(defaultMatch());
  const filtered = withMatch(conditions);
  const block = { chainId: "tron:mainnet" as const, number: 1, blockId: "00".repeat(32), timestampMs: 0 };
  let events = 0;
  const run = (watched: Map<string, Watcher[]>) => () => {
    for (const b of blocks) events += buildEvents(block, b, watched, BROADCASTED).length;
  };
  console.log(`match conditions: ${BLOCKS} blocks × ${TX_PER_BLOCK} transfers, every address watched by 3 subscriptions`);
  measure("buildEvents, 3 assets + minAmount + incoming", "block", BLOCKS, run(filtered), run(plain), "default conditions");

  const flat = blocks.flat();
  const w = filtered.get(pool[0]!)![0]!;
  let hits = 0;
  measure(
    "rolePasses, 3 assets + minAmount + incoming",
    "call",
    flat.length * 2,
    () => {
      for (const t of flat) hits += (rolePasses(w.match, t, "from") ? 1 : 0) + (rolePasses(w.match, t, "to") ? 1 : 0);
    },
    () => {
      for (const t of flat) hits += (w.events.includes(BROADCASTED) ? 1 : 0) + (w.events.includes(t.standard) ? 1 : 0);
    },
    "kind check",
  );

  const texts = Array.from({ length: 1_000 }, (_, i) => encodeMatch({ ...conditions, assets: [{ standard: "TRX", minAmount: String(i % 20) }] }));
  let sink = 0;
  measure(
    "conditions of 1,000 watchers (20 distinct)",
    "block",
    100,
    () => {
      for (let r = 0; r < 100; r++) for (const t of texts) sink += decodeMatch(t).directions.length;
    },
    () => {
      for (let r = 0; r < 100; r++) for (const t of texts) sink += (JSON.parse(t) as MatchConditions).directions.length;
    },
    "JSON.parse each",
  );
  if (events + sink + hits < 0) console.log("unreachable");
}
