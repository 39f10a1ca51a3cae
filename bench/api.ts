// `bun run bench api [seconds]`: the public API through the gateway (auth cache, rate limiter in Redis, registry
// in-process on PostgreSQL) at concurrency 64, beside a bare Bun.serve hello-world measured in the same run as
// the runtime's floor, and beside the gateway alone and the registry alone, so a figure can be attributed. The
// load generator runs in a child process; each phase is preceded by a 2 s warm-up. BENCH_SECONDS or the first
// argument sets the length of each phase (default 20 s).
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { setLogLevel } from "../common/logger.ts";
import { inProcessTransport } from "../common/rpc.ts";
import { SubscriptionService } from "../gen/webhooks/registry/v1/registry_pb.ts";
import { startStack, TEST_DESTINATION, type Stack } from "../test/support/stack.ts";
import { addressWrites, printAddressWrites } from "./api-addresses.ts";
import type { LoadResult, LoadSpec } from "./load-generator.ts";

const CONCURRENCY = 64;

/** Seconds of load run and discarded before each measured phase, so the JIT has compiled the hot paths. */
const WARMUP_SECONDS = 2;

async function load(spec: LoadSpec): Promise<LoadResult> {
  await runChild({ ...spec, seconds: Math.min(WARMUP_SECONDS, spec.seconds) });
  return runChild(spec);
}

async function runChild(spec: LoadSpec): Promise<LoadResult> {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "load-generator.ts"), JSON.stringify(spec)], {
    stdout: "pipe",
    stderr: "inherit",
  });
  const out = await new Response(child.stdout).text();
  if ((await child.exited) !== 0) throw new Error(`load generator failed: ${out}`);
  return JSON.parse(out.trim().split("\n").at(-1)!) as LoadResult;
}

function line(label: string, r: LoadResult, target?: string): string {
  const fmt = (n: number) => n.toFixed(1).padStart(7);
  return `${label.padEnd(34)} ${Math.round(r.rps).toString().padStart(7)} req/s   p50 ${fmt(r.p50Ms)} ms   p99 ${fmt(r.p99Ms)} ms   ${r.requests} requests, ${r.errors} errors${r.firstError ? ` (first: ${r.firstError})` : ""}${target ? `   target ${target}` : ""}`;
}

async function registryGetRate(stack: Stack, id: string, seconds: number): Promise<number> {
  const rows = await stack.registry.store.db.$client`SELECT key_id FROM subscriptions WHERE id = ${id}`;
  const keyId = (rows[0] as { key_id: string }).key_id;
  const client = createClient(SubscriptionService, inProcessTransport(stack.registry.routes));
  let calls = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline) {
        await client.getSubscription({ keyId, id });
        calls++;
      }
    }),
  );
  return calls / ((performance.now() - started) / 1000);
}

export default async function bench(): Promise<void> {
  const argSeconds = Number(process.argv[3] ?? process.env.BENCH_SECONDS ?? 20);
  const seconds = Number.isFinite(argSeconds) && argSeconds > 0 ? argSeconds : 20;

  // The floor: what this runtime and load generator reach with no work per request.
  const hello = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("hello") });
  const floor = await load({
    url: `http://127.0.0.1:${hello.port}/`,
    method: "GET",
    headers: {},
    concurrency: CONCURRENCY,
    seconds,
    expectStatus: 200,
  });
  hello.stop(true);

  // The access log (one line per request at info) is off, as in the other benches: the figure is the API's work.
  setLogLevel("warn");
  const stack = await startStack({ env: { RATE_LIMIT_RPS: "1000000", RATE_LIMIT_BURST: "1000000", LOG_LEVEL: "warn" } });
  try {
    const { key } = await stack.createKey({ name: "bench" });
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const createBody = (description: string) =>
      JSON.stringify({ destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.broadcasted"], description });
    const seed = await fetch(`${stack.baseUrl}/v1/subscriptions`, { method: "POST", headers, body: createBody("seed") });
    if (seed.status !== 201) throw new Error(`seed create failed: ${seed.status} ${await seed.text()}`);
    const { id } = (await seed.json()) as { id: string };

    // The registry alone per GetSubscription (in-process, no HTTP, no gateway), so a slow end-to-end figure can
    // be attributed. Its callers share its event loop here, so it is an indication, not a strict ceiling.
    await registryGetRate(stack, id, Math.min(WARMUP_SECONDS, seconds));
    const registryOnly = await registryGetRate(stack, id, seconds);

    const get = await load({
      url: `${stack.baseUrl}/v1/subscriptions/${id}`,
      method: "GET",
      headers: { authorization: headers.authorization },
      concurrency: CONCURRENCY,
      seconds,
      expectStatus: 200,
    });
    // What the gateway alone costs (auth from its cache, the Redis rate limiter, routing, the error body): the
    // part of each API request that is not the registry and PostgreSQL.
    const gatewayOnly = await load({
      url: `${stack.baseUrl}/v1/no-such-route`,
      method: "GET",
      headers: { authorization: headers.authorization },
      concurrency: CONCURRENCY,
      seconds,
      expectStatus: 404,
    });
    const create = await load({
      url: `${stack.baseUrl}/v1/subscriptions`,
      method: "POST",
      headers,
      body: createBody("bench {n}"),
      concurrency: CONCURRENCY,
      seconds,
      expectStatus: 201,
    });

    const [load1, load5] = loadavg();
    console.log(`api benchmark: concurrency ${CONCURRENCY}, ${seconds} s per phase, load generator in a child process, ${cpus().length} CPUs`);
    console.log(`load average at the end: ${load1!.toFixed(2)} (1 min), ${load5!.toFixed(2)} (5 min) — other work on the machine shows here`);
    console.log(line("baseline: bare Bun.serve hello", floor));
    console.log(line("gateway only (auth, rate limit, 404)", gatewayOnly));
    console.log(
      `${"registry only (GetSubscription)".padEnd(34)} ${Math.round(registryOnly).toString().padStart(7)} calls/s (RPC in-process, no HTTP, 64 concurrent calls from the same event loop)`,
    );
    console.log(line("GET /v1/subscriptions/:id", get, ">= 3000 req/s, p99 <= 30 ms"));
    console.log(line("POST /v1/subscriptions", create, ">= 1000 req/s"));
    console.log(
      `GET reaches ${((get.rps / floor.rps) * 100).toFixed(1)}% of the floor; create ${((create.rps / floor.rps) * 100).toFixed(1)}%.`,
    );
    // PATCH / PUT of 10,000 addresses, one request at a time (bench/api-addresses.ts).
    printAddressWrites(await addressWrites(stack, key));
  } finally {
    await stack.stop();
  }
}
