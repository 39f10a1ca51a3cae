// The short run of the hostile-input fuzzer (test/chaos/fuzz.ts; `bun run chaos` sends 10,000): fuzzed requests over
// every public route must all get an answer inside the contract — no 5xx, errors in the contract's shape with a
// known code, none slower than 1 s (one slow answer that is fast when sent again was the shared machine, not the
// input) — while /healthz, polled throughout, keeps answering (within 1 s here; `bun run chaos` holds it to 100 ms).
import { expect, test } from "bun:test";
import { describeViolation, runChaos } from "../../chaos/fuzz.ts";

test("400 fuzzed requests over every route: no 5xx, contract-shaped errors, answers within 1 s, /healthz never stalls", async () => {
  const seed = Number(process.env.FUZZ_SEED ?? Date.now());
  const summary = await runChaos({ requests: 400, seed });
  const context = `seed ${seed} (FUZZ_SEED=${seed} replays it)`;
  expect(summary.violations.map(describeViolation), context).toEqual([]);
  expect(summary.health.failures, context).toBe(0);
  expect(summary.health.polls).toBeGreaterThan(0);
  // The process must never stall: every /healthz poll answers, none after 1 s. The 100 ms goal is `bun run chaos`'s
  // (run on a quiet machine); here, on two cores shared with other suites, a poll can wait ~150 ms on the scheduler.
  expect(summary.health.slowestMs, context).toBeLessThan(1_000);
  // The run reached the routes' own logic, not only the checks in front of them.
  expect(Object.keys(summary.byStatus).map(Number).some((s) => s >= 200 && s < 300)).toBe(true);
}, 120_000);
