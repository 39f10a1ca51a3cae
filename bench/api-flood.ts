// `bun run bench api-flood [seconds] [rounds]`: what an unauthenticated flood costs a valid key. Three processes
// besides the stack's: a flooding client (bench/flood-client.ts) sends requests with random key-shaped tokens as fast
// as one client can, FLOOD_CONCURRENCY (default 64) in flight over keep-alive connections, each sent as soon as the
// previous answer is read; a measuring client (bench/valid-client.ts) calls GET /v1/subscriptions with a valid key
// one request at a time; this process serves the stack and probes /readyz. Each round measures the valid key idle,
// then under the flood (which starts half a second before and outlasts the measured phase), so both figures of a
// round saw the same machine; the medians over the rounds are the result. The stack is the in-process one of the
// tests with the production limits of unknown-key lookups (10/s, burst 100 per client address).
// BENCH_SECONDS / the first argument sets each phase's length (default 5 s), BENCH_ROUNDS / the second the rounds (5);
// HELD_PER_CLIENT sets the gateway's bound on refusals held per client (0: none held, every refusal answered at once).
import { loadavg } from "node:os";
import { setLogLevel } from "../common/logger.ts";
import { startStack } from "../test/support/stack.ts";
import { runJsonChild } from "./child-json.ts";

const FLOOD_CONCURRENCY = Number(process.env.FLOOD_CONCURRENCY ?? 64);
const HELD_PER_CLIENT = process.env.HELD_PER_CLIENT === undefined ? undefined : Number(process.env.HELD_PER_CLIENT);

interface Measured {
  latencies: number[];
  statuses: Record<string, number>;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

function counts(m: Record<string, number>): string {
  return Object.entries(m).map(([s, n]) => `${s}×${n}`).join(" ") || "-";
}

export default async function bench(): Promise<void> {
  setLogLevel("error");
  const seconds = Number(process.argv[3] ?? process.env.BENCH_SECONDS ?? 5);
  const rounds = Number(process.argv[4] ?? process.env.BENCH_ROUNDS ?? 5);
  const stack = await startStack({
    env: { UNKNOWN_KEY_RATE_LIMIT_RPS: "10", UNKNOWN_KEY_RATE_LIMIT_BURST: "100", LOG_LEVEL: "error" },
    refusalsHeld: HELD_PER_CLIENT === undefined ? undefined : { perClient: HELD_PER_CLIENT, total: 4_096 },
  });
  try {
    const key = await stack.createKey();
    const url = `${stack.baseUrl}/v1/subscriptions`;
    const measure = (ms: number) => runJsonChild<Measured>("valid-client.ts", { url, key: key.key, ms });

    await measure(2_000); // warm-up
    const held = HELD_PER_CLIENT === undefined ? "the gateway's default" : HELD_PER_CLIENT;
    console.log(`valid key, GET /v1/subscriptions one at a time, ${seconds} s per phase, flood ${FLOOD_CONCURRENCY} in flight, refusals held per client: ${held}`);
    console.log(
      `${"round".padEnd(6)} ${"idle n".padStart(7)} ${"p50".padStart(6)} ${"p99".padStart(7)}   ${"flood n".padStart(7)} ${"p50".padStart(6)} ${"p99".padStart(7)}  ${"ratio".padStart(6)}  flood/s   flood answers; /readyz; load`,
    );
    const idleP99: number[] = [];
    const floodP99: number[] = [];
    const ratios: number[] = [];
    const floodRates: number[] = [];
    for (let round = 1; round <= rounds; round++) {
      const idle = await measure(seconds * 1_000);

      let probing = true;
      const readyz: Record<string, number> = {};
      const prober = (async () => {
        while (probing) {
          const status = (await fetch(`${stack.baseUrl}/readyz`)).status;
          readyz[status] = (readyz[status] ?? 0) + 1;
          await Bun.sleep(50);
        }
      })();
      const floodMs = seconds * 1_000 + 1_000;
      const flood = runJsonChild<Record<string, number>>("flood-client.ts", { url, concurrency: FLOOD_CONCURRENCY, ms: floodMs });
      await Bun.sleep(500);
      const underFlood = await measure(seconds * 1_000);
      const floodStatuses = await flood;
      probing = false;
      await prober;

      const floodTotal = Object.values(floodStatuses).reduce((a, b) => a + b, 0);
      const [i50, i99, f50, f99] = [percentile(idle.latencies, 50), percentile(idle.latencies, 99), percentile(underFlood.latencies, 50), percentile(underFlood.latencies, 99)];
      idleP99.push(i99);
      floodP99.push(f99);
      ratios.push(f99 / i99);
      floodRates.push(floodTotal / (floodMs / 1_000));
      console.log(
        `${String(round).padEnd(6)} ${String(idle.latencies.length).padStart(7)} ${i50.toFixed(2).padStart(6)} ${i99.toFixed(2).padStart(7)}   ${String(underFlood.latencies.length).padStart(7)} ${f50.toFixed(2).padStart(6)} ${f99.toFixed(2).padStart(7)}  ${(f99 / i99).toFixed(2).padStart(5)}×  ${floodRates.at(-1)!.toFixed(0).padStart(7)}   ${counts(floodStatuses)}; ${counts(readyz)}; ${loadavg()[0]!.toFixed(1)}`,
      );
      const bad = Object.keys({ ...idle.statuses, ...underFlood.statuses }).filter((s) => s !== "200");
      if (bad.length > 0) console.log(`  the valid key got ${counts(idle.statuses)} idle, ${counts(underFlood.statuses)} under the flood`);
    }
    console.log(
      `median of ${rounds}: p99 idle ${median(idleP99).toFixed(2)} ms, under the flood ${median(floodP99).toFixed(2)} ms, ratio ${median(ratios).toFixed(2)}× (goal ≤ 3×); flood ${median(floodRates).toFixed(0)} requests/s`,
    );
  } finally {
    await stack.stop();
  }
}
