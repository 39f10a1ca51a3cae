// `bun run bench api-flood [seconds]`: what an unauthenticated flood costs a valid key. One client (a process of
// its own, bench/flood-client.ts) sends requests with random key-shaped tokens as fast as it can (64 in flight)
// while another calls GET /v1/subscriptions with a
// valid key one request at a time; the valid key's latency is measured first idle, then under the flood, and
// printed side by side with the flood's answers (401 looked up, 429 refused before any lookup) and /readyz's.
// The stack is the in-process one of the tests with the production limits of unknown-key lookups (10/s, burst 100
// per client address). BENCH_SECONDS or the first argument sets each phase's length (default 10 s).
import { loadavg } from "node:os";
import { setLogLevel } from "../common/logger.ts";
import { startStack } from "../test/support/stack.ts";
import { runJsonChild } from "./child-json.ts";

const FLOOD_CONCURRENCY = 64;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function counts(xs: number[]): string {
  const m = new Map<number, number>();
  for (const x of xs) m.set(x, (m.get(x) ?? 0) + 1);
  return [...m].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`).join(" ") || "-";
}

export default async function bench(): Promise<void> {
  setLogLevel("error");
  const seconds = Number(process.argv[3] ?? process.env.BENCH_SECONDS ?? 10);
  const stack = await startStack({ env: { UNKNOWN_KEY_RATE_LIMIT_RPS: "10", UNKNOWN_KEY_RATE_LIMIT_BURST: "100", LOG_LEVEL: "error" } });
  try {
    const key = await stack.createKey();
    const url = `${stack.baseUrl}/v1/subscriptions`;
    const call = async (authorization: string) => {
      const res = await fetch(url, { headers: { authorization } });
      await res.arrayBuffer();
      return res.status;
    };

    /** The valid key's latencies (ms) and statuses over `ms`, one request at a time. */
    const user = async (ms: number) => {
      const latencies: number[] = [];
      const statuses: number[] = [];
      const end = performance.now() + ms;
      while (performance.now() < end) {
        const t = performance.now();
        statuses.push(await call(`Bearer ${key.key}`));
        latencies.push(performance.now() - t);
      }
      return { latencies: latencies.sort((a, b) => a - b), statuses };
    };

    await user(2_000); // warm-up
    const idle = await user(seconds * 1_000);

    let flooding = true;
    const readyz: number[] = [];
    const prober = async () => {
      while (flooding) {
        readyz.push((await fetch(`${stack.baseUrl}/readyz`)).status);
        await Bun.sleep(50);
      }
    };
    // The flood starts a moment before the measured phase and outlasts it.
    const flood = runJsonChild<Record<string, number>>("flood-client.ts", { url, concurrency: FLOOD_CONCURRENCY, ms: seconds * 1_000 + 2_000 });
    const probing = prober();
    await Bun.sleep(500);
    const underFlood = await user(seconds * 1_000);
    const floodStatuses = await flood;
    flooding = false;
    await probing;
    const floodTotal = Object.values(floodStatuses).reduce((a, b) => a + b, 0);

    const row = (name: string, r: typeof idle) =>
      `${name.padEnd(12)} ${String(r.latencies.length).padStart(7)} ${percentile(r.latencies, 50).toFixed(2).padStart(8)} ${percentile(r.latencies, 99).toFixed(2).padStart(8)}   ${counts(r.statuses)}`;
    console.log(`valid key, GET /v1/subscriptions one at a time, ${seconds} s per phase (load average ${loadavg()[0]!.toFixed(1)})`);
    console.log(`${"phase".padEnd(12)} ${"requests".padStart(7)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)}   statuses`);
    console.log(row("idle", idle));
    console.log(row("flood", underFlood));
    console.log(`p99 under flood / idle: ${(percentile(underFlood.latencies, 99) / percentile(idle.latencies, 99)).toFixed(2)}×`);
    const floodCounts = Object.entries(floodStatuses).map(([s, n]) => `${s}×${n}`).join(" ");
    console.log(`flood: ${floodTotal} requests (${(floodTotal / (seconds + 2)).toFixed(0)}/s): ${floodCounts}`);
    console.log(`/readyz during the flood: ${counts(readyz)}`);
  } finally {
    await stack.stop();
  }
}
