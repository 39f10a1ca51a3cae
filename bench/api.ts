// `bun run bench api [seconds]`: the public API as a user measures it, from outside with wrk (Debian's /usr/bin/wrk,
// 2 threads, 64 connections), beside a bare Bun.serve hello world measured by the same wrk in the same run (the
// floor: this runtime, this load tool, this machine's load). The stack is the one `npm start` runs: gateway,
// registry and deliverer in one process with in-process transports, on PostgreSQL and Redis; the deliverer signs
// and POSTs each test event to a local HTTPS receiver. The key holds 1,000 subscriptions; the one read carries 200
// addresses. BENCH_SECONDS or the first argument sets each phase's length (default 15 s, after a 3 s warm-up).
//
// BENCH_PHASES=get,list,create,test measures only those (to profile one path: `BENCH_PHASES=list bun --cpu-prof
// bench/run.ts api 8`; the floor and the receiver run in their own processes, so the profile holds the stack only).
// Each row prints the CPU per request of this process, of the run's PostgreSQL backends and of wrk: on a shared
// 2-core machine the throughput moves with everyone else's work, the CPU per request much less.
//
// Where the time goes (2026-11-24; CPU per request of each part, measured in-process with process.cpuUsage and
// `bun --cpu-prof` on this bench's phases; README.md "Benchmarks" has the figures):
// - GET by id, 200 addresses: ~110 µs in the stack (the registry's read 42 µs: one prepared query, drizzle's row
//   mapping, the address text split; the in-process RPC's protobuf create() of 200 entries ~18; authentication
//   from the cache and the Redis rate limiter ~15–25; JSON of 200 addresses 12; render 4; Elysia's response check
//   and HTTP the rest) and ~70 µs in PostgreSQL, once 120 (json_agg(json_build_array(…)) per address).
// - List of 50: ~430 µs in the stack (the store 137 µs, mostly drizzle mapping 51 wide rows with their jsonb;
//   protobuf messages for 50 subscriptions ~90; render 25 (two ISO dates each); JSON 20; TypeBox's check of the
//   page 14; auth and limiter 25; Elysia and HTTP for a 19 KB body the rest), ~60 µs in PostgreSQL, and wrk
//   itself ~115 µs per page on the same two cores. Built per call by drizzle, the query alone had cost ~100 µs more.
// - Create: ~200–250 µs in the stack (field checks with the destination's DNS answer, secret generation and its
//   AES-GCM seal, the idempotent write; drizzle's insert builder with RETURNING had cost ~60–70 µs more) and
//   ~150–200 µs in PostgreSQL: a transaction of four round trips (BEGIN, txid_current for the lost-COMMIT check,
//   INSERT, COMMIT) whose COMMIT waits for the WAL flush.
// - Test event: ~530–750 µs in the stack and ~350–500 µs in PostgreSQL for the request and its delivery together:
//   the gateway's ownership read, the deliverer's fresh GetDeliveryTargets (a drizzle join built per call, ~200 µs,
//   until it became a prepared statement: ~35), the event's transaction, two Redis pipelines (reserve before the
//   INSERT, due after COMMIT), then the claim (one 8-shard script pipeline: once per event, plus an empty one,
//   until wake() coalesced), the row load, signing, the TLS POST and the batched outcome write.
import { randomBytes } from "node:crypto";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { setLogLevel } from "../common/logger.ts";
import { hexToBase58 } from "../common/tron-address.ts";
import { startStack, type Stack } from "../test/support/stack.ts";
import { createTestPki } from "../tools/receiver/certs.ts";
import { addressWrites, printAddressWrites } from "./api-addresses.ts";
import { getPhase, luaString, Wrk, type WrkPhase, type WrkResult } from "./wrk.ts";

const CONNECTIONS = 64;
const THREADS = 2;
const WARMUP_SECONDS = 3;
const SUBSCRIPTIONS = 1_000;
const INLINED_ADDRESSES = 200;

/** The PostgreSQL backends serving the run's database (none until the stack is up). */
let postgresPids: () => Promise<number[]> = async () => [];
const wrk = new Wrk({ threads: THREADS, connections: CONNECTIONS, postgresPids: () => postgresPids() });

/** A warm-up run (discarded) then the measured one. */
function measure(phase: WrkPhase, seconds: number): Promise<WrkResult> {
  return wrk.measure(phase, seconds, WARMUP_SECONDS);
}

/**
 * POSTs whose body differs per request: `template` with "{n}" replaced by a per-thread counter and the thread's id,
 * so no two requests in the run send the same body.
 */
function postPhase(url: string, authorization: string, template: string, expectStatus: number): WrkPhase {
  const [head, tail] = template.split("{n}");
  const lua = `
wrk.method = "POST"
wrk.headers["authorization"] = ${luaString(authorization)}
wrk.headers["content-type"] = "application/json"
local counter = 0
local prefix = tostring(math.random(1, 1e9))
function request()
  counter = counter + 1
  ${tail === undefined ? `return wrk.format(nil, nil, nil, ${luaString(head!)})` : `return wrk.format(nil, nil, nil, ${luaString(head!)} .. prefix .. "-" .. counter .. ${luaString(tail)})`}
end
`;
  const probe = () =>
    fetch(url, { method: "POST", headers: { authorization, "content-type": "application/json" }, body: template.replace("{n}", "probe") });
  return { url, expectStatus, lua, probe };
}

/**
 * POST …/test under load, then a bounded wait for the deliverer to drain: accepted is not delivered, so the run also
 * says how many test events reached the receiver during the load and by the drain's end. (wrk counts completed
 * requests only; the 64 in flight when it stops were accepted too.)
 */
async function measureTest(url: string, authorization: string, seconds: number, delivered: () => Promise<number>) {
  const phase = postPhase(url, authorization, `{"kind":"service.ping"}`, 200);
  const warmup = await wrk.run(phase, WARMUP_SECONDS);
  const before = await delivered();
  const started = performance.now();
  const result = await wrk.run(phase, seconds);
  const atEnd = await delivered();
  const drainDeadline = performance.now() + 60_000;
  let last = -1;
  let now = atEnd;
  while (performance.now() < drainDeadline && now !== last) {
    last = now;
    await Bun.sleep(1_000);
    now = await delivered();
  }
  const total = now - before;
  const elapsed = (performance.now() - started) / 1000;
  const note = `test events: ${warmup.requests + result.requests} accepted (warm-up included); ${now} delivered to the HTTPS receiver in all, ${atEnd - before} during the measured load, ${total} from its start to the drain's end (${(total / elapsed).toFixed(0)}/s over ${elapsed.toFixed(1)} s)`;
  return { result, note };
}

/** The ports a child prints on its first line, read without waiting for the child to end. */
async function firstLinePorts(stream: ReadableStream<Uint8Array>): Promise<number[]> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of stream) {
    text += decoder.decode(chunk, { stream: true });
    if (text.includes("\n")) break;
  }
  const ports = text.trim().split(" ").map(Number);
  if (!ports.every((n) => Number.isInteger(n) && n > 0)) throw new Error(`a child process did not print its ports: ${text}`);
  return ports;
}

function line(label: string, r: WrkResult, floor: WrkResult, goal: string): string {
  const fmt = (n: number) => n.toFixed(1).padStart(6);
  const errors = r.errors > 0 ? `, ${r.errors} wrong status` : "";
  const socket = r.socketErrors ? `, ${r.socketErrors}` : "";
  const perRequest = (s: number) => `${((s / r.requests) * 1e6).toFixed(0)} µs`;
  const cpu = `stack ${perRequest(r.cpu.stack)}, PostgreSQL ${perRequest(r.cpu.postgres)}, wrk ${perRequest(r.cpu.wrk)}`;
  return `| ${label} | ${Math.round(r.rps).toLocaleString("en-US")} req/s, p50 ${fmt(r.p50Ms)} ms, p99 ${fmt(r.p99Ms)} ms (${r.requests} requests${errors}${socket}) | ${((r.rps / floor.rps) * 100).toFixed(1)}% | ${cpu} | ${goal} |`;
}

async function seed(stack: Stack, authorization: string, receiverUrl: string): Promise<{ bigId: string; testId: string }> {
  const headers = { authorization, "content-type": "application/json" };
  const post = async (body: unknown): Promise<string> => {
    const res = await fetch(`${stack.baseUrl}/v1/subscriptions`, { method: "POST", headers, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`seed create failed: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { id: string }).id;
  };
  const body = (i: number) => ({
    destination: { type: "https", url: `${receiverUrl}/hooks/${i}` },
    events: ["wallet.transfer.broadcasted", "wallet.transfer.confirmed"],
    description: `merchant wallet group ${i}`,
  });
  // The subscription the test events go to and the one read with its addresses are created first (the oldest); the
  // other 998 fill the key, in parallel batches.
  const testId = await post({ ...body(0), events: ["service.ping", "wallet.transfer.broadcasted"] });
  const bigId = await post(body(1));
  for (let i = 2; i < SUBSCRIPTIONS; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, SUBSCRIPTIONS - i) }, (_, j) => post(body(i + j))));
  }
  const addresses = Array.from({ length: INLINED_ADDRESSES }, () => ({
    chainId: "tron:mainnet",
    address: hexToBase58("41" + randomBytes(20).toString("hex")),
  }));
  const put = await fetch(`${stack.baseUrl}/v1/subscriptions/${bigId}/filters/addresses`, {
    method: "PUT",
    headers,
    body: JSON.stringify(addresses),
  });
  if (put.status !== 200) throw new Error(`seed addresses failed: ${put.status} ${await put.text()}`);
  return { bigId, testId };
}

export default async function bench(): Promise<void> {
  const argSeconds = Number(process.argv[3] ?? process.env.BENCH_SECONDS ?? 15);
  const seconds = Number.isFinite(argSeconds) && argSeconds > 0 ? argSeconds : 15;

  // The floor, measured first and again last (the machine's load moves during the run): wrk against hello world.
  // In its own process, so a profile of this one (`bun --cpu-prof`) holds the stack's work only.
  const hello = Bun.spawn(
    [process.execPath, "-e", `const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("hello") }); console.log(s.port);`],
    { stdout: "pipe", stderr: "inherit" },
  );
  const [helloPort] = await firstLinePorts(hello.stdout);
  const helloUrl = `http://127.0.0.1:${helloPort}/`;
  const helloPhase: WrkPhase = { url: helloUrl, lua: "", expectStatus: 200, probe: () => fetch(helloUrl) };
  const floorBefore = await measure(helloPhase, seconds);

  setLogLevel("warn");
  const pki = createTestPki();
  // The receiver in its own process too, as a real destination would be: its TLS work is not the stack's.
  const receiverProc = Bun.spawn(
    [
      process.execPath,
      "-e",
      `import { startFastReceiver } from ${JSON.stringify(join(import.meta.dir, "../tools/receiver/server.ts"))};
       const r = startFastReceiver({ cert: process.env.CERT, key: process.env.KEY });
       const c = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(String(r.count())) });
       console.log(r.port + " " + c.port);`,
    ],
    { stdout: "pipe", stderr: "inherit", env: { ...process.env, CERT: pki.cert, KEY: pki.key } },
  );
  const [receiverPort, countPort] = await firstLinePorts(receiverProc.stdout);
  const receiver = {
    port: receiverPort!,
    count: async () => Number(await (await fetch(`http://127.0.0.1:${countPort}/`)).text()),
  };
  const caFile = pki.caFile;
  const stack = await startStack({
    deliverer: true,
    env: {
      RATE_LIMIT_RPS: "1000000",
      RATE_LIMIT_BURST: "1000000",
      LOG_LEVEL: "warn",
      DELIVERY_CA_FILE: caFile,
      SSRF_ALLOW_CIDRS: "127.0.0.1/32",
    },
  });
  try {
    const databaseName = new URL(stack.database.url).pathname.slice(1);
    const sql = stack.registry.store.db.$client;
    postgresPids = async () =>
      ((await sql`SELECT pid FROM pg_stat_activity WHERE datname = ${databaseName}`) as { pid: number }[]).map((r) => r.pid);
    const { key } = await stack.createKey({ name: "bench" });
    const authorization = `Bearer ${key}`;
    const { bigId, testId } = await seed(stack, authorization, `https://localhost:${receiver.port}`);
    const base = stack.baseUrl;

    // BENCH_PHASES=get,list,create,test,addresses runs only those (to profile one path); the default is all five.
    const only = process.env.BENCH_PHASES?.split(",");
    const wanted = (name: string) => only === undefined || only.includes(name);
    const get = wanted("get") ? await measure(getPhase(`${base}/v1/subscriptions/${bigId}`, authorization), seconds) : undefined;
    const list = wanted("list") ? await measure(getPhase(`${base}/v1/subscriptions?limit=50`, authorization), seconds) : undefined;
    const create = !wanted("create") ? undefined : await measure(
      postPhase(
        `${base}/v1/subscriptions`,
        authorization,
        JSON.stringify({
          destination: { type: "https", url: `https://localhost:${receiver.port}/hooks/new` },
          events: ["wallet.transfer.broadcasted", "wallet.transfer.confirmed"],
          description: "merchant wallet group {n}",
        }),
        201,
      ),
      seconds,
    );
    const test = wanted("test") ? await measureTest(`${base}/v1/subscriptions/${testId}/test`, authorization, seconds, receiver.count) : undefined;

    const floorAfter = await measure(helloPhase, seconds);
    const floor = floorBefore.rps <= floorAfter.rps ? floorBefore : floorAfter;

    const [load1, load5] = loadavg();
    console.log(
      `api benchmark ${new Date().toISOString().slice(0, 10)}: wrk -t${THREADS} -c${CONNECTIONS}, ${seconds} s per phase after ${WARMUP_SECONDS} s warm-up, ${cpus().length} CPUs, load average ${load1!.toFixed(2)} (1 min) ${load5!.toFixed(2)} (5 min)`,
    );
    console.log(`key with ${SUBSCRIPTIONS} subscriptions; GET reads one with ${INLINED_ADDRESSES} inlined addresses`);
    console.log("| path | ours | of the floor | CPU per request | goal |");
    console.log("|---|---|---|---|---|");
    console.log(
      `| floor: bare Bun.serve hello (first / last) | ${Math.round(floorBefore.rps).toLocaleString("en-US")} / ${Math.round(floorAfter.rps).toLocaleString("en-US")} req/s, p99 ${floorBefore.p99Ms.toFixed(1)} / ${floorAfter.p99Ms.toFixed(1)} ms | 100% (the lower) | wrk ${((floor.cpu.wrk / floor.requests) * 1e6).toFixed(0)} µs | |`,
    );
    if (get) console.log(line(`GET /v1/subscriptions/:id (${INLINED_ADDRESSES} addresses)`, get, floor, "≥ 10,000 req/s, p99 ≤ 25 ms"));
    if (list) console.log(line("GET /v1/subscriptions?limit=50", list, floor, "≥ 5,000 req/s, p99 ≤ 40 ms"));
    if (create) console.log(line("POST /v1/subscriptions", create, floor, "≥ 5,000 req/s"));
    if (test) {
      console.log(line("POST /v1/subscriptions/:id/test (accepted)", test.result, floor, "≥ 4,000/s, p99 ≤ 50 ms"));
      console.log(test.note);
    }
    // PATCH / PUT of 10,000 addresses, one request at a time, beside their own floors (bench/api-addresses.ts).
    if (wanted("addresses")) printAddressWrites(await addressWrites(stack, key));
  } finally {
    await stack.stop();
    receiverProc.kill();
    hello.kill();
    wrk.close();
  }
}
