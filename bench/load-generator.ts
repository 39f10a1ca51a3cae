// A closed-loop HTTP load generator, run as its own process (`bun bench/load-generator.ts <json spec>`) so it never
// shares the measured server's event loop. Prints one JSON line: requests, errors, req/s, p50/p99 in ms.
export interface LoadSpec {
  url: string;
  method: string;
  headers: Record<string, string>;
  /** A body sent as is, or a template where "{n}" is replaced by a per-request counter. */
  body?: string;
  concurrency: number;
  seconds: number;
  /** Status every response must have to count as a success. */
  expectStatus: number;
}

export interface LoadResult {
  requests: number;
  errors: number;
  firstError?: string;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let counter = 0;
  const deadline = performance.now() + spec.seconds * 1000;
  const worker = async () => {
    while (performance.now() < deadline) {
      const n = counter++;
      const started = performance.now();
      try {
        const res = await fetch(spec.url, {
          method: spec.method,
          headers: spec.headers,
          body: spec.body?.replaceAll("{n}", String(n)),
        });
        const text = await res.text();
        if (res.status !== spec.expectStatus) {
          errors++;
          firstError ??= `${res.status} ${text.slice(0, 200)}`;
        }
      } catch (err) {
        errors++;
        firstError ??= String(err);
      }
      latencies.push(performance.now() - started);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: spec.concurrency }, worker));
  const elapsed = (performance.now() - started) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  return {
    requests: latencies.length,
    errors,
    firstError,
    rps: latencies.length / elapsed,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
  };
}

if (import.meta.main) {
  const spec = JSON.parse(process.argv[2] ?? "{}") as LoadSpec;
  const result = await runLoad(spec);
  process.stdout.write(JSON.stringify(result) + "\n");
}
