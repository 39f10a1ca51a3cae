// The pacer of refused callers (gateway/refusal-pace.ts): a hold ends after its delay; past the bound per client or
// in all, a hold ends at once (false); an ended hold frees its slot; no hold outlasts its bound.
import { expect, test } from "bun:test";
import { createRefusalPacer, MAX_HOLD_MS } from "../../../gateway/refusal-pace.ts";

test("holds up to the bound per client and in all, each for its delay; the rest at once; slots come back", async () => {
  const pacer = createRefusalPacer({ perClient: 2, total: 3 });
  const started = performance.now();
  const a = [pacer.hold("a", 200), pacer.hold("a", 200), pacer.hold("a", 200)];
  const b = [pacer.hold("b", 200), pacer.hold("b", 200)];
  expect(pacer.held()).toBe(3);
  // The third of a's is past its client's bound, the second of b's past the total: both answered at once.
  expect(await Promise.race([a[2], Bun.sleep(100).then(() => "waiting")])).toBe(false);
  expect(await Promise.race([b[1], Bun.sleep(100).then(() => "waiting")])).toBe(false);
  expect(await Promise.all([a[0], a[1], b[0]])).toEqual([true, true, true]);
  expect(performance.now() - started).toBeGreaterThanOrEqual(190);
  expect(pacer.held()).toBe(0);
  expect(await pacer.hold("a", 1)).toBe(true);
});

test("a hold lasts at most its bound (default MAX_HOLD_MS), whatever Retry-After asks", async () => {
  expect(MAX_HOLD_MS).toBeLessThan(30_000);
  const pacer = createRefusalPacer({ perClient: 1, total: 1, maxHoldMs: 100 });
  expect(await Promise.race([pacer.hold("a", 3_600_000), Bun.sleep(20_000).then(() => "still held")])).toBe(true);
});
