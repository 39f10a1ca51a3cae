// The short fault run (test/chaos/faults.ts): the stack as separate processes on a PostgreSQL and a Redis primary +
// replica of its own, under SIGKILLs, forks (one while no matcher runs), failing and hanging receivers, a Redis
// failover, a PostgreSQL restart and a node answering 429 and timing out. Every invariant holds: none broken.
// `bun run chaos --faults --minutes N` runs the same for longer.
import { expect, test } from "bun:test";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatMissed } from "../chaos/classify.ts";
import { formatInvariants } from "../chaos/invariants.ts";
import { runFaults } from "../chaos/faults.ts";

test(
  "the short fault run breaks no invariant",
  async () => {
    const logFile = join(tmpdir(), `chaos-faults-test-${process.pid}.jsonl`);
    // The drain ends once nothing more can arrive; its bound keeps a stuck run inside the test's own timeout.
    const report = await runFaults({ phaseMs: 75_000, drainMs: 150_000, log: (line) => console.log(line), logFile });
    for (const line of report.summary) console.log(line);
    console.log(formatInvariants(report.results));
    if (report.missed.length > 0) console.log(formatMissed(report.missed));
    console.log(`the services' log lines: ${logFile}`);
    for (const r of report.results) expect(r.checked).toBeGreaterThan(0);
    expect(Object.fromEntries(report.results.map((r) => [r.name, r.broken]))).toEqual(Object.fromEntries(report.results.map((r) => [r.name, 0])));
  },
  // A loaded machine stretches the setup and the timeline several times over (seen: 590 s in all).
  900_000,
);
