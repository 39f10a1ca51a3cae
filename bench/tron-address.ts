// Address validation cost for one maximal PATCH (10,000 addresses), ours beside tronweb's isAddressValid/fromHex,
// which do the same checks; both measured in this run on the same inputs.
import { randomBytes } from "node:crypto";
import { hexToBase58, isBase58Address, tronwebUtils } from "../common/tron-address.ts";

const BATCH = 10_000;
const ROUNDS = 7;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function time(fn: () => void): number {
  const start = performance.now();
  fn();
  return performance.now() - start;
}

function measure(label: string, ours: () => void, baseline: () => void): void {
  ours();
  baseline(); // warm both
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    a.push(time(ours));
    b.push(time(baseline));
  }
  const ma = median(a);
  const mb = median(b);
  console.log(
    `${label.padEnd(34)} ours ${ma.toFixed(1).padStart(7)} ms (${((ma * 1000) / BATCH).toFixed(2)} µs each)` +
      `   baseline tronweb ${mb.toFixed(1).padStart(7)} ms (${((mb * 1000) / BATCH).toFixed(2)} µs each)   ×${(mb / ma).toFixed(1)}`,
  );
}

export default function main(): void {
  const hexes = Array.from({ length: BATCH }, () => `41${randomBytes(20).toString("hex")}`);
  const valid = hexes.map((h) => hexToBase58(h));
  // A tenth altered in one character: the realistic mix of a client's typos.
  const mixed = valid.map((a, i) => (i % 10 === 0 ? `${a.slice(0, 33)}${a[33] === "a" ? "b" : "a"}` : a));

  console.log(`tron-address: batches of ${BATCH}, median of ${ROUNDS} rounds`);
  let sink = 0;
  measure(
    "isBase58Address (valid)",
    () => valid.forEach((a) => (sink += isBase58Address(a) ? 1 : 0)),
    () => valid.forEach((a) => (sink += tronwebUtils.isAddressValid(a) ? 1 : 0)),
  );
  measure(
    "isBase58Address (10% invalid)",
    () => mixed.forEach((a) => (sink += isBase58Address(a) ? 1 : 0)),
    () => mixed.forEach((a) => (sink += tronwebUtils.isAddressValid(a) ? 1 : 0)),
  );
  measure(
    "hexToBase58",
    () => hexes.forEach((h) => (sink += hexToBase58(h).length)),
    () => hexes.forEach((h) => (sink += tronwebUtils.fromHex(h).length)),
  );
  if (sink === 0) console.log("(unreachable)");
}
