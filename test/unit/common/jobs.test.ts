// The one runner every background job uses (common/jobs.ts) and the waits it is built on (common/timing.ts).
import { describe, expect, test } from "bun:test";
import { JobRunner, type Job } from "../../../common/jobs.ts";
import { log } from "../../../common/logger.ts";
import { backoffDelay, MemoMap, orAfter, Pause, sleep, withTimeout } from "../../../common/timing.ts";

const quiet = log.child({ test: "jobs" });

/** A job whose runs are counted and whose current run ends when the test says so. */
function gatedJob(opts: Partial<Job> & { result?: () => boolean | void } = {}) {
  let runs = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  let release: (() => void) | undefined;
  let signalSeen: AbortSignal | undefined;
  const job: Job = {
    name: "gated",
    everyMs: 60_000,
    ...opts,
    async run(signal) {
      signalSeen = signal;
      runs++;
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise<void>((r) => (release = r));
      inFlight--;
      return opts.result?.();
    },
  };
  return {
    job,
    runs: () => runs,
    maxInFlight: () => maxInFlight,
    finish: () => release?.(),
    signal: () => signalSeen,
  };
}

const until = async (fn: () => boolean, ms = 2_000) => {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) throw new Error("condition not met");
    await Bun.sleep(2);
  }
};

describe("JobRunner", () => {
  test("runs a job at start, then waits its interval", async () => {
    const g = gatedJob();
    const runner = new JobRunner(quiet).add(g.job);
    runner.start();
    await until(() => g.runs() === 1);
    g.finish();
    await Bun.sleep(50);
    expect(g.runs()).toBe(1);
    await runner.stop();
  });

  test("a wake-up during a run is kept: one more run right after it, never two at once", async () => {
    const g = gatedJob();
    const runner = new JobRunner(quiet).add(g.job);
    runner.start();
    await until(() => g.runs() === 1);
    runner.wake("gated");
    runner.wake("gated");
    g.finish();
    await until(() => g.runs() === 2);
    g.finish();
    await Bun.sleep(50);
    expect(g.runs()).toBe(2);
    expect(g.maxInFlight()).toBe(1);
    await runner.stop();
  });

  test("an unfinished or failed run is retried after retryMs, not everyMs", async () => {
    let n = 0;
    const runner = new JobRunner(quiet).add({
      name: "flaky",
      everyMs: 60_000,
      retryMs: 10,
      async run() {
        n++;
        if (n === 1) return false;
        if (n === 2) throw new Error("boom");
      },
    });
    runner.start();
    await until(() => n === 3);
    await Bun.sleep(50);
    expect(n).toBe(3);
    await runner.stop();
  });

  test("stop() aborts the run's signal and waits for the run to end", async () => {
    const g = gatedJob();
    const runner = new JobRunner(quiet).add(g.job);
    runner.start();
    await until(() => g.runs() === 1);
    let stopped = false;
    const stopping = runner.stop().then(() => (stopped = true));
    await Bun.sleep(20);
    expect(g.signal()?.aborted).toBe(true);
    expect(stopped).toBe(false);
    g.finish();
    await stopping;
    expect(g.runs()).toBe(1);
  });
});

describe("timing", () => {
  test("withTimeout: the value in time, the caller's error after the deadline; a late failure is swallowed", async () => {
    expect(await withTimeout(Promise.resolve(7), 100, () => new Error("late"))).toBe(7);
    const never = new Promise<number>((_, reject) => setTimeout(() => reject(new Error("later still")), 30));
    await expect(withTimeout(never, 5, () => new Error("late"))).rejects.toThrow("late");
    await Bun.sleep(40);
  });

  test("orAfter: the fallback when the work is slow", async () => {
    expect(await orAfter(Bun.sleep(200).then(() => true), 5, false)).toBe(false);
    expect(await orAfter(Promise.resolve(true), 100, false)).toBe(true);
  });

  test("sleep ends at once when its signal aborts", async () => {
    const stop = new AbortController();
    const started = Date.now();
    const slept = sleep(10_000, stop.signal);
    stop.abort();
    await slept;
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  test("Pause: a wake-up ends a pause; one with nobody paused makes the next pause return at once", async () => {
    const pause = new Pause();
    const started = Date.now();
    const waiting = pause.wait(10_000);
    pause.wake();
    await waiting;
    pause.wake();
    await pause.wait(10_000);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe("bounded memos and backoff", () => {
  test("MemoMap forgets everything when full, never when a known key is set again", () => {
    const m = new MemoMap<string, number>(2);
    m.set("a", 1).set("b", 2).set("a", 3);
    expect([...m.entries()]).toEqual([["a", 3], ["b", 2]]);
    m.set("c", 4);
    expect([...m.entries()]).toEqual([["c", 4]]);
  });

  test("backoffDelay doubles from the base up to the cap; jitter stays in the upper half", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 99].map((n) => backoffDelay(n, 250, 10_000))).toEqual([250, 500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
    for (let i = 0; i < 100; i++) {
      const d = backoffDelay(3, 200, 5_000, true);
      expect(d).toBeGreaterThanOrEqual(400);
      expect(d).toBeLessThanOrEqual(800);
    }
  });
});
