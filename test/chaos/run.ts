// `bun run chaos [REQUESTS] [SEED]`: the hostile-input fuzzer (test/chaos/fuzz.ts) against a stack it starts itself on
// loopback, 10,000 requests by default. Prints a summary and exits 1 if any answer broke the contract.
// `bun run chaos --faults [--minutes N] [--seed S] [--keep]`: the fault run (test/chaos/faults.ts), faults for N
// minutes (3); prints each invariant's count checked and broken, what became of each missed delivery, and exits 1 if
// any is broken. --keep leaves the run's PostgreSQL and Redis running afterwards, to look into.
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { formatMissed } from "./classify.ts";
import { formatInvariants } from "./invariants.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { faults: { type: "boolean", default: false }, minutes: { type: "string" }, seed: { type: "string" }, keep: { type: "boolean", default: false } },
});

if (values.faults) {
  const { runFaults } = await import("./faults.ts");
  const minutes = Number(values.minutes ?? 3);
  const logFile = join(tmpdir(), `chaos-faults-${process.pid}.jsonl`);
  const report = await runFaults({
    phaseMs: minutes * 60_000,
    ...(values.seed ? { seed: Number(values.seed) } : {}),
    log: (line) => console.log(line),
    logFile,
    handleSignals: true,
    keep: values.keep,
  });
  for (const line of report.summary) console.log(line);
  console.log(formatInvariants(report.results));
  if (report.missed.length > 0) console.log(formatMissed(report.missed));
  console.log(`fault run: ${report.seconds.toFixed(0)} s in all; the services' log lines are in ${logFile}`);
  process.exit(report.results.some((r) => r.broken > 0) ? 1 : 0);
}

const { describeViolation, runChaos } = await import("./fuzz.ts");
const requests = Number(positionals[0] ?? 10_000);
const seed = Number(positionals[1] ?? Date.now());
console.log(`chaos: ${requests} fuzzed requests over every public route, seed ${seed}`);
const summary = await runChaos({ requests, seed, onProgress: (n) => console.log(`  ${n} sent`) });
const statuses = Object.entries(summary.byStatus)
  .map(([s, n]) => `${s}×${n}`)
  .join(" ");
console.log(`requests      ${summary.requests} in ${summary.seconds.toFixed(1)} s (${Math.round(summary.requests / summary.seconds)}/s)`);
console.log(`statuses      ${statuses}`);
console.log(`latency       p99 ${summary.p99Ms.toFixed(1)} ms, slowest ${summary.slowestMs.toFixed(1)} ms (limit 1000 ms); ${summary.slowOnce} over it once but not when sent again`);
console.log(
  `/healthz      ${summary.health.polls} polls, p90 ${summary.health.p90Ms.toFixed(1)} ms, p99 ${summary.health.p99Ms.toFixed(1)} ms, slowest ${summary.health.slowestMs.toFixed(1)} ms (limit 100 ms), ${summary.health.failures} failed; slowest polls ${summary.health.top.join(", ")} ms`,
);
console.log(`violations    ${summary.violations.length}`);
for (const v of summary.violations.slice(0, 20)) console.log("  " + describeViolation(v));
const healthy = summary.health.failures === 0 && summary.health.slowestMs <= 100;
process.exit(summary.violations.length === 0 && healthy ? 0 : 1);
