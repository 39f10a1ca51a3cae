// `bun run bench api [seconds]`: the public API as a user measures it, from outside with wrk (Debian's /usr/bin/wrk,
// 2 threads, 64 connections), beside a bare Bun.serve hello world measured by the same wrk in the same run (the
// floor: this runtime, this load tool, this machine's load). The stack is the one `npm start` runs: gateway,
// registry and deliverer in one process with in-process transports, on PostgreSQL and Redis; the deliverer signs
// and POSTs each test event to a local HTTPS receiver. The key holds 1,000 subscriptions; the one read carries 200
// addresses. BENCH_SECONDS or the first argument sets each phase's length (default 15 s, after a 3 s warm-up).
//
// Where the time goes is written in README.md, "Benchmarks" (profiles of this bench with `bun --cpu-prof`).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { setLogLevel } from "../common/logger.ts";
import { hexToBase58 } from "../common/tron-address.ts";
import { startStack, type Stack } from "../test/support/stack.ts";
import { createTestPki } from "../tools/receiver/certs.ts";
import { startFastReceiver } from "../tools/receiver/server.ts";

const CONNECTIONS = 64;
const THREADS = 2;
const WARMUP_SECONDS = 3;
const SUBSCRIPTIONS = 1_000;
const INLINED_ADDRESSES = 200;

interface WrkResult {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** Responses that were not the expected status (wrk counts non-2xx/3xx; the Lua script counts the rest). */
  errors: number;
  socketErrors: string;
}

interface Phase {
  url: string;
  /** A Lua script for wrk (method, headers, bodies); the status check is appended. */
  lua: string;
  expectStatus: number;
}

let scriptDir = "";

function toMs(value: string, unit: string): number {
  const n = Number(value);
  return unit === "us" ? n / 1000 : unit === "s" ? n * 1000 : unit === "m" ? n * 60_000 : n;
}

// Counts responses whose status is not the one expected and prints it at the end (wrk's own count lumps every
// 2xx/3xx together, and a 200 where 201 was expected is still wrong).
const STATUS_CHECK = (expect: number) => `
local wrong = 0
function response(status, headers, body)
  if status ~= ${expect} then wrong = wrong + 1 end
end
local threads = {}
function setup(thread) table.insert(threads, thread) end
function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + (t:get("wrong") or 0) end
  io.write("WRONG_STATUS " .. total .. "\\n")
end
`;

async function wrk(phase: Phase, seconds: number): Promise<WrkResult> {
  const file = join(scriptDir, `phase-${Math.random().toString(36).slice(2)}.lua`);
  writeFileSync(file, `${phase.lua}\n${STATUS_CHECK(phase.expectStatus)}`);
  const proc = Bun.spawn(
    ["wrk", `-t${THREADS}`, `-c${CONNECTIONS}`, `-d${seconds}s`, "--latency", "--timeout", "10s", "-s", file, phase.url],
    { stdout: "pipe", stderr: "pipe" },
  );
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if ((await proc.exited) !== 0) throw new Error(`wrk failed: ${err || out}`);
  const num = (re: RegExp) => {
    const m = re.exec(out);
    if (!m) throw new Error(`unexpected wrk output (${re}):\n${out}`);
    return m;
  };
  const p50 = num(/^\s+50%\s+([\d.]+)(us|ms|s|m)\s*$/m);
  const p99 = num(/^\s+99%\s+([\d.]+)(us|ms|s|m)\s*$/m);
  return {
    rps: Number(num(/Requests\/sec:\s+([\d.]+)/)[1]),
    p50Ms: toMs(p50[1]!, p50[2]!),
    p99Ms: toMs(p99[1]!, p99[2]!),
    requests: Number(num(/(\d+) requests in/)[1]),
    errors: Number(num(/WRONG_STATUS (\d+)/)[1]),
    socketErrors: /Socket errors:.*$/m.exec(out)?.[0] ?? "",
  };
}

/** A warm-up run (discarded) then the measured one. */
async function measure(phase: Phase, seconds: number): Promise<WrkResult> {
  await wrk(phase, WARMUP_SECONDS);
  return wrk(phase, seconds);
}

const luaString = (s: string) => JSON.stringify(s); // a JSON string literal is a valid Lua string literal here

function getPhase(url: string, authorization: string): Phase {
  return { url, expectStatus: 200, lua: `wrk.method = "GET"\nwrk.headers["authorization"] = ${luaString(authorization)}` };
}

/**
 * POSTs whose body differs per request: `template` with "{n}" replaced by a per-thread counter and the thread's id,
 * so no two requests in the run send the same body.
 */
function postPhase(url: string, authorization: string, template: string, expectStatus: number): Phase {
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
  return { url, expectStatus, lua };
}

function line(label: string, r: WrkResult, floor: WrkResult, goal: string): string {
  const fmt = (n: number) => n.toFixed(1).padStart(6);
  const errors = r.errors > 0 ? `, ${r.errors} wrong status` : "";
  const socket = r.socketErrors ? `, ${r.socketErrors}` : "";
  return `| ${label} | ${Math.round(r.rps).toLocaleString("en-US")} req/s, p50 ${fmt(r.p50Ms)} ms, p99 ${fmt(r.p99Ms)} ms (${r.requests} requests${errors}${socket}) | ${((r.rps / floor.rps) * 100).toFixed(1)}% | ${goal} |`;
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
  scriptDir = mkdtempSync(join(tmpdir(), "bench-api-"));

  // The floor, measured first and again last (the machine's load moves during the run): wrk against hello world.
  const hello = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("hello") });
  const helloPhase: Phase = { url: `http://127.0.0.1:${hello.port}/`, lua: "", expectStatus: 200 };
  const floorBefore = await measure(helloPhase, seconds);

  setLogLevel("warn");
  const pki = createTestPki();
  const receiver = startFastReceiver({ cert: pki.cert, key: pki.key });
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
    const { key } = await stack.createKey({ name: "bench" });
    const authorization = `Bearer ${key}`;
    const { bigId, testId } = await seed(stack, authorization, `https://localhost:${receiver.port}`);
    const base = stack.baseUrl;

    const get = await measure(getPhase(`${base}/v1/subscriptions/${bigId}`, authorization), seconds);
    const list = await measure(getPhase(`${base}/v1/subscriptions?limit=50`, authorization), seconds);
    const create = await measure(
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
    const testPhase = postPhase(`${base}/v1/subscriptions/${testId}/test`, authorization, `{"kind":"service.ping"}`, 200);
    const testWarmup = await wrk(testPhase, WARMUP_SECONDS);
    const deliveredBefore = receiver.count();
    const testStarted = performance.now();
    const test = await wrk(testPhase, seconds);
    // Accepted is not delivered: wait (bounded) for the deliverer to catch up, and say how far it got.
    const atEnd = receiver.count();
    const drainDeadline = performance.now() + 60_000;
    let last = -1;
    while (performance.now() < drainDeadline && receiver.count() !== last) {
      last = receiver.count();
      await Bun.sleep(1_000);
    }
    const delivered = receiver.count() - deliveredBefore;
    const deliveredSeconds = (performance.now() - testStarted) / 1000;

    const floorAfter = await measure(helloPhase, seconds);
    const floor = floorBefore.rps <= floorAfter.rps ? floorBefore : floorAfter;

    const [load1, load5] = loadavg();
    console.log(
      `api benchmark ${new Date().toISOString().slice(0, 10)}: wrk -t${THREADS} -c${CONNECTIONS}, ${seconds} s per phase after ${WARMUP_SECONDS} s warm-up, ${cpus().length} CPUs, load average ${load1!.toFixed(2)} (1 min) ${load5!.toFixed(2)} (5 min)`,
    );
    console.log(`key with ${SUBSCRIPTIONS} subscriptions; GET reads one with ${INLINED_ADDRESSES} inlined addresses`);
    console.log("| path | ours | of the floor | goal |");
    console.log("|---|---|---|---|");
    console.log(
      `| floor: bare Bun.serve hello (first / last) | ${Math.round(floorBefore.rps).toLocaleString("en-US")} / ${Math.round(floorAfter.rps).toLocaleString("en-US")} req/s, p99 ${floorBefore.p99Ms.toFixed(1)} / ${floorAfter.p99Ms.toFixed(1)} ms | 100% (the lower) | |`,
    );
    console.log(line(`GET /v1/subscriptions/:id (${INLINED_ADDRESSES} addresses)`, get, floor, "≥ 10,000 req/s, p99 ≤ 25 ms"));
    console.log(line("GET /v1/subscriptions?limit=50", list, floor, "≥ 5,000 req/s, p99 ≤ 40 ms"));
    console.log(line("POST /v1/subscriptions", create, floor, "≥ 5,000 req/s"));
    console.log(line("POST /v1/subscriptions/:id/test (accepted)", test, floor, "≥ 4,000/s, p99 ≤ 50 ms"));
    console.log(
      `test events: ${testWarmup.requests + test.requests} accepted (warm-up included); ${receiver.count()} delivered to the HTTPS receiver in all, ${atEnd - deliveredBefore} during the measured load, ${delivered} from its start to the drain's end (${(delivered / deliveredSeconds).toFixed(0)}/s over ${deliveredSeconds.toFixed(1)} s)`,
    );
  } finally {
    await stack.stop();
    await receiver.close();
    hello.stop(true);
    rmSync(scriptDir, { recursive: true, force: true });
  }
}
