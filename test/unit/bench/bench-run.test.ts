// `bun run bench NAME` (bench/run.ts) runs only the benchmarks: a helper's name gets the usage line and exit 2, not
// whatever importing that module would do, and the usage line names every file of bench/ that is a benchmark.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const bench = join(import.meta.dir, "..", "..", "..", "bench");

function run(...args: string[]) {
  const out = Bun.spawnSync([process.execPath, join(bench, "run.ts"), ...args], { stdout: "pipe", stderr: "pipe" });
  return { exitCode: out.exitCode, text: out.stdout.toString() + out.stderr.toString() };
}

test("a helper module, an unknown name or none is answered with the usage line and exit 2", () => {
  for (const args of [["counters"], ["stream-consumer"], ["no-such-bench"], ["../cli/start"], []]) {
    const r = run(...args);
    expect({ args, exitCode: r.exitCode }).toEqual({ args, exitCode: 2 });
    expect(r.text).toStartWith("usage: bun run bench <name>");
  }
});

test("the usage line lists every benchmark file (those with a default export) and nothing else", () => {
  const listed = /one of: ([^)]*)\)/.exec(run().text)?.[1]?.split(", ").sort();
  const benches = readdirSync(bench)
    .filter((f) => f.endsWith(".ts") && f !== "run.ts" && /^export default /m.test(readFileSync(join(bench, f), "utf8")))
    .map((f) => f.slice(0, -3))
    .sort();
  expect(benches.length).toBeGreaterThan(5);
  expect(listed).toEqual(benches);
});
