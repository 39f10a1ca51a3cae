// The hostile-input fuzzer for the whole public API: fast-check builds requests for every route (every method of
// /v1/subscriptions…, /filters/addresses, /events, /test, /retry, /secrets/rotate, operational and unknown paths)
// with hostile bodies, headers, query strings and path parameters, and each answer is judged against the contract:
// no 5xx, every error in the `{error, message, detail, requestId}` shape with a known code, no answer slower than
// the limit, and /healthz (polled concurrently the whole time) answering within its limit.
// Used by test/integration/gateway/api.fuzz.test.ts (a few hundred requests) and `bun run chaos` (test/chaos/run.ts).
// The stack is the in-process one of test/support/stack.ts, on loopback; the deliverer serves its RPCs without
// a worker, so test events are recorded but nothing is ever sent anywhere.
import fc from "fast-check";
import { isErrorCode } from "../../common/contract/index.ts";
import { startStack, TEST_HOSTS, type Stack } from "../support/stack.ts";
import { staticResolver } from "../../common/ssrf.ts";

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
}

export interface Violation {
  request: FuzzRequest;
  status: number;
  ms: number;
  problem: string;
  body: string;
}

export interface ChaosSummary {
  requests: number;
  byStatus: Record<number, number>;
  violations: Violation[];
  slowestMs: number;
  /** Answers over the limit that were within it when sent again (the machine, not the input). */
  slowOnce: number;
  p99Ms: number;
  health: { polls: number; slowestMs: number; p90Ms: number; p99Ms: number; failures: number; top: number[] };
  seconds: number;
}

export interface ChaosOptions {
  requests: number;
  seed?: number;
  /** Requests in flight at once (default 4). */
  concurrency?: number;
  /** An answer slower than this is a violation (default 1000 ms). */
  slowMs?: number;
  /** How often /healthz is polled (default every 20 ms). */
  healthEveryMs?: number;
  /** Called every `progressEvery` requests. */
  onProgress?: (done: number) => void;
}

// ---------------------------------------------------------------------------------------------------------------
// What the fuzzer knows about the target: real ids of the caller and of another key, so routes are reached deep.

interface Known {
  subIds: string[];
  foreignSubId: string;
  eventIds: string[];
  key: string;
  otherKey: string;
}

const VALID_ADDRESS = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";

// ---------------------------------------------------------------------------------------------------------------
// Arbitraries

/** Strings a careless parser trips over: controls, NUL, lone surrogates, RTL marks, very long runs, JSON-ish text. */
const hostileString = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary" }),
  fc.string({ unit: "grapheme" }),
  fc.constantFrom(
    "",
    " ",
    "\u0000",
    "a\u0000b",
    "\ud800",
    "\udfff",
    "\u202e",
    "\uffff",
    "%00",
    "%zz",
    "../../etc/passwd",
    "${jndi:x}",
    "'; DROP TABLE subscriptions; --",
    "<script>",
    "🔥",
    "ü",
    "\\",
    "null",
    "[]",
    "{}",
    "1e309",
    "-0",
    "NaN",
    "sub_",
    "sub_01JZZZZZZZZZZZZZZZZZZZZZZZ",
    "evt_01JZZZZZZZZZZZZZZZZZZZZZZZ",
    "v1:",
    "v1:AAAA",
  ),
  fc.nat({ max: 5000 }).map((n) => "x".repeat(n)),
);

const hostileUrl = fc.oneof(
  fc.constantFrom(
    "https://hooks.example.com/h",
    " https://hooks.example.com/a",
    "https://hooks.example.com/a ",
    "https://hooks.exa\tmple.com/a",
    "https://hooks.example.com/a\n",
    "https:\\\\hooks.example.com\\path",
    "https://hooks.example.com/ü",
    "https://hooks.example.com/🔥",
    "https://hooks.example.com/\ud800",
    "https://ｈｏｏｋｓ.example.com/x",
    "https://hooks.example.com/\u0000",
    "https://user:pw@hooks.example.com/",
    "https://10.0.0.1/",
    "https://[::1]/",
    "https://127.1/",
    "http://hooks.example.com/",
    "https://nowhere.invalid/",
    "https://xn--/",
    "https://a..b/",
    "https://%00/",
    "https://hooks.example.com:0/",
    "https://hooks.example.com:99999/",
    "javascript:alert(1)",
    "https://hooks.example.com/" + "a".repeat(2100),
    "https://hooks.example.com/" + "ü".repeat(400),
  ),
  fc.webUrl({ withQueryParameters: true, withFragments: true }),
  hostileString.map((s) => `https://hooks.example.com/${s}`),
  hostileString,
);

/** Any JSON value, nesting kept modest (deep nesting is its own case below). */
const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  hostileString,
  fc.constantFrom(null, true, 0, -1, 1.5, 1e308, Number.MAX_SAFE_INTEGER + 2, [], {}),
);

const eventKinds = fc.oneof(
  fc.constantFrom("service.ping", "wallet.transfer.broadcasted", "wallet.transfer.confirmed", "wallet.transfer.failed"),
  hostileString,
);

const addressEntry = fc.record(
  {
    chainId: fc.oneof(fc.constantFrom("tron:mainnet", "tron:nile", "tron:shasta", "tron:other"), hostileString, anyJson),
    address: fc.oneof(fc.constant(VALID_ADDRESS), hostileString, anyJson),
  },
  { requiredKeys: [] },
);

const subscriptionBody = fc.record(
  {
    destination: fc.oneof(
      fc.record({ type: fc.oneof(fc.constant("https"), hostileString, anyJson), url: fc.oneof(hostileUrl, anyJson) }, { requiredKeys: [] }),
      anyJson,
    ),
    events: fc.oneof(fc.array(eventKinds, { maxLength: 20 }), anyJson),
    status: fc.oneof(fc.constantFrom("enabled", "disabled"), hostileString, anyJson),
    description: fc.oneof(hostileString, anyJson),
    match: anyJson,
  },
  { requiredKeys: [] },
);

const addressesBody = fc.oneof(
  fc.record({ add: fc.oneof(fc.array(addressEntry, { maxLength: 5 }), anyJson), remove: fc.oneof(fc.array(addressEntry, { maxLength: 5 }), anyJson) }, { requiredKeys: [] }),
  fc.array(addressEntry, { maxLength: 5 }),
  fc.record({ addresses: fc.array(addressEntry, { maxLength: 5 }) }),
);

const rotateBody = fc.record(
  {
    gracePeriodSeconds: fc.oneof(fc.integer({ min: -10, max: 700_000 }), anyJson),
    secret: fc.oneof(fc.constant("whsec_" + Buffer.alloc(32, 7).toString("base64")), hostileString, anyJson),
  },
  { requiredKeys: [] },
);

const testBody = fc.record({ kind: fc.oneof(eventKinds, anyJson) }, { requiredKeys: [] });

/** Raw body text: JSON of a shaped body, any JSON, broken JSON, deep nesting, or nothing. */
function bodyText(shaped: fc.Arbitrary<unknown>): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 5, arbitrary: shaped.map((v) => JSON.stringify(v)) },
    { weight: 2, arbitrary: anyJson.map((v) => JSON.stringify(v) ?? "null") },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: hostileString },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom("[", "{\"a\":", "[{\"x\":"), fc.integer({ min: 30, max: 30_000 }), fc.boolean())
        .map(([open, n, closed]) => open.repeat(n) + (closed ? "1" + (open === "[" ? "]" : "}").repeat(n) : "")),
    },
    { weight: 1, arbitrary: fc.constantFrom("{", "{\"a\":}", "\ufeff{}", "{\"a\":1}garbage", "[1,]", "{'a':1}", "\u0000") },
  );
}

type PathPart = "sub" | "event";

interface RouteTemplate {
  segments: (string | PathPart)[];
  body: fc.Arbitrary<unknown>;
  methods: string[];
}

const ROUTES: RouteTemplate[] = [
  { segments: ["v1", "subscriptions"], body: subscriptionBody, methods: ["GET", "POST"] },
  { segments: ["v1", "subscriptions", "sub"], body: subscriptionBody, methods: ["GET", "PUT", "DELETE"] },
  { segments: ["v1", "subscriptions", "sub", "filters", "addresses"], body: addressesBody, methods: ["GET", "PATCH", "PUT"] },
  { segments: ["v1", "subscriptions", "sub", "events"], body: anyJson, methods: ["GET"] },
  { segments: ["v1", "subscriptions", "sub", "events", "event"], body: anyJson, methods: ["GET"] },
  { segments: ["v1", "subscriptions", "sub", "events", "event", "retry"], body: anyJson, methods: ["POST"] },
  { segments: ["v1", "subscriptions", "sub", "test"], body: testBody, methods: ["POST"] },
  { segments: ["v1", "subscriptions", "sub", "secrets", "rotate"], body: rotateBody, methods: ["POST"] },
  { segments: ["healthz"], body: anyJson, methods: ["GET"] },
  { segments: ["readyz"], body: anyJson, methods: ["GET"] },
  { segments: ["openapi.json"], body: anyJson, methods: ["GET"] },
  { segments: ["v1"], body: anyJson, methods: [] },
  { segments: ["v1", "nothing", "here"], body: anyJson, methods: [] },
  { segments: ["v2", "subscriptions"], body: anyJson, methods: [] },
  { segments: ["subscriptions"], body: anyJson, methods: [] },
];

const ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/** Header values fetch can carry (ByteString, no CR/LF/NUL): hostile within what HTTP allows. */
const headerValue = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 300 }),
  fc.string({ unit: fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 20 }),
  fc.constantFrom("", " ", "a".repeat(4000), "Bearer", "Bearer ", "bearer whk_x", "Basic YTpi", "application/json; charset=utf-16"),
);

const queryValue = fc.oneof(
  fc.constantFrom("", "0", "1", "-1", "200", "201", "1.5", "1e3", "abc", "%00", "%zz", "%ff", "v1:AAAA", "pending", "failed", "%F0%9F%94%A5"),
  hostileString.map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, "x"))),
);

function requestArb(known: Known): fc.Arbitrary<FuzzRequest> {
  const subId = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...known.subIds) },
    { weight: 1, arbitrary: fc.constant(known.foreignSubId) },
    { weight: 2, arbitrary: hostileString.map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, "x"))) },
    { weight: 1, arbitrary: fc.constantFrom("%2F", "%00", "..", ".", "%2e%2e", "sub_01JZZZZZZZZZZZZZZZZZZZZZZZ", "SUB_01JZZZZZZZZZZZZZZZZZZZZZZZ", "%F0%9F%94%A5", "ü") },
  );
  const eventId = fc.oneof(
    { weight: 4, arbitrary: known.eventIds.length ? fc.constantFrom(...known.eventIds) : fc.constant("evt_01JZZZZZZZZZZZZZZZZZZZZZZZ") },
    { weight: 2, arbitrary: hostileString.map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, "x"))) },
  );
  const route = fc.constantFrom(...ROUTES);
  return route.chain((r) =>
    fc
      .record({
        method: fc.oneof({ weight: 4, arbitrary: r.methods.length ? fc.constantFrom(...r.methods) : fc.constantFrom(...ALL_METHODS) }, { weight: 1, arbitrary: fc.constantFrom(...ALL_METHODS) }),
        sub: subId,
        event: eventId,
        query: fc.array(fc.tuple(fc.oneof(fc.constantFrom("limit", "nextPageToken", "status", "limit[]", ""), fc.string({ maxLength: 8 }).map(encodeURIComponent)), queryValue), { maxLength: 4 }),
        trailingSlash: fc.boolean().chain((b) => (b ? fc.boolean() : fc.constant(false))).chain((b) => (b ? fc.boolean() : fc.constant(false))),
        auth: fc.oneof(
          { weight: 8, arbitrary: fc.constant(`Bearer ${known.key}`) },
          { weight: 1, arbitrary: fc.constant(`Bearer ${known.otherKey}`) },
          { weight: 1, arbitrary: fc.constant(undefined) },
          { weight: 1, arbitrary: headerValue },
        ),
        contentType: fc.oneof(
          { weight: 8, arbitrary: fc.constant("application/json") },
          { weight: 1, arbitrary: fc.constant(undefined) },
          { weight: 1, arbitrary: headerValue },
        ),
        extraHeaders: fc.array(
          fc.tuple(fc.constantFrom("idempotency-key", "x-request-id", "accept", "accept-encoding", "x-forwarded-for", "if-none-match", "range"), headerValue),
          { maxLength: 3 },
        ),
        body: bodyText(r.body),
      })
      .map((g): FuzzRequest => {
        const path =
          "/" +
          r.segments.map((s) => (s === "sub" ? g.sub : s === "event" ? g.event : s)).join("/") +
          (g.trailingSlash ? "/" : "") +
          (g.query.length ? "?" + g.query.map(([k, v]) => `${k}=${v}`).join("&") : "");
        const headers: Record<string, string> = {};
        if (g.auth !== undefined) headers.authorization = g.auth;
        if (g.contentType !== undefined) headers["content-type"] = g.contentType;
        for (const [k, v] of g.extraHeaders) headers[k] = v;
        // GET and HEAD cannot carry a body in fetch.
        const body = g.method === "GET" || g.method === "HEAD" ? undefined : g.body;
        return { method: g.method, path, headers, body };
      }),
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Judging one answer

const ERROR_KEYS = ["detail", "error", "message", "requestId"].join(",");

function judge(req: FuzzRequest, status: number, text: string, headers: Headers, ms: number, slowMs: number): string | null {
  if (status >= 500) return `status ${status}`;
  if (ms > slowMs) return `slow: ${Math.round(ms)} ms`;
  if (!headers.get("x-request-id")) return "no X-Request-Id";
  if (status < 400 || req.method === "HEAD") return null;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return "error body is not JSON";
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) return "error body is not an object";
  if (Object.keys(body).sort().join(",") !== ERROR_KEYS) return `error body keys: ${Object.keys(body).join(",")}`;
  if (typeof body.error !== "string" || !isErrorCode(body.error)) return `unknown error code ${String(body.error)}`;
  if (typeof body.message !== "string" || body.message === "") return "error without a message";
  if (body.detail !== null && (typeof body.detail !== "object" || Array.isArray(body.detail))) return "detail is neither an object nor null";
  if (body.requestId !== headers.get("x-request-id")) return "requestId differs from X-Request-Id";
  return null;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

// ---------------------------------------------------------------------------------------------------------------
// Running

async function seed(stack: Stack): Promise<Known> {
  const me = await stack.createKey({ name: "fuzz" });
  const other = await stack.createKey({ name: "fuzz-other" });
  const call = async (key: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(stack.baseUrl + path, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`seeding ${method} ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { id: string };
  };
  const newSub = (key: string) =>
    call(key, "POST", "/v1/subscriptions", { destination: { type: "https", url: "https://hooks.example.com/h" }, events: ["service.ping"] });
  const subIds: string[] = [];
  for (let i = 0; i < 4; i++) subIds.push((await newSub(me.key)).id);
  const eventIds = [(await call(me.key, "POST", `/v1/subscriptions/${subIds[0]}/test`)).id];
  await call(me.key, "PATCH", `/v1/subscriptions/${subIds[1]}/filters/addresses`, { add: [{ chainId: "tron:mainnet", address: VALID_ADDRESS }] });
  const foreignSubId = (await newSub(other.key)).id;
  return { subIds, foreignSubId, eventIds, key: me.key, otherKey: other.key };
}

/** Starts the stack on loopback, sends `requests` fuzzed requests and returns what it saw. */
export async function runChaos(opts: ChaosOptions): Promise<ChaosSummary> {
  const stack = await startStack({
    resolver: staticResolver({ ...TEST_HOSTS }),
    deliverer: { startWorker: false },
  });
  try {
    return await runAgainst(stack, opts);
  } finally {
    await stack.stop();
  }
}

export async function runAgainst(stack: Stack, opts: ChaosOptions): Promise<ChaosSummary> {
  const slowMs = opts.slowMs ?? 1_000;
  const concurrency = opts.concurrency ?? 4;
  const known = await seed(stack);
  const samples = fc.sample(requestArb(known), { numRuns: opts.requests, seed: opts.seed ?? Date.now() });

  const byStatus: Record<number, number> = {};
  const violations: Violation[] = [];
  const durations: number[] = [];
  let slowOnce = 0;

  const health = { polls: 0, failures: 0, durations: [] as number[] };
  let running = true;
  const healthLoop = (async () => {
    while (running) {
      const t0 = performance.now();
      try {
        const res = await fetch(stack.baseUrl + "/healthz");
        await res.arrayBuffer();
        if (res.status !== 200) health.failures++;
      } catch {
        health.failures++;
      }
      health.durations.push(performance.now() - t0);
      health.polls++;
      await Bun.sleep(opts.healthEveryMs ?? 20);
    }
  })();

  const started = performance.now();
  let next = 0;
  let done = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= samples.length) return;
      const req = samples[i]!;
      const t0 = performance.now();
      let status = 0;
      let text = "";
      let headers = new Headers();
      try {
        const res = await fetch(stack.baseUrl + req.path, { method: req.method, headers: req.headers, body: req.body });
        text = await res.text();
        status = res.status;
        headers = res.headers;
      } catch (err) {
        violations.push({ request: req, status: 0, ms: performance.now() - t0, problem: `request failed: ${String(err)}`, body: "" });
        continue;
      }
      const ms = performance.now() - t0;
      durations.push(ms);
      byStatus[status] = (byStatus[status] ?? 0) + 1;
      let problem = judge(req, status, text, headers, ms, slowMs);
      if (problem?.startsWith("slow")) {
        // A shared machine stalls now and then: an input that is slow because of what it is stays slow when sent
        // again, one that met a busy moment does not (counted, not a violation).
        const t1 = performance.now();
        await (await fetch(stack.baseUrl + req.path, { method: req.method, headers: req.headers, body: req.body })).arrayBuffer();
        const retryMs = performance.now() - t1;
        if (retryMs <= slowMs) {
          slowOnce++;
          problem = null;
        } else {
          problem = `slow twice: ${Math.round(ms)} ms, then ${Math.round(retryMs)} ms`;
        }
      }
      if (problem) violations.push({ request: req, status, ms, problem, body: text.slice(0, 500) });
      done++;
      if (opts.onProgress && done % 1000 === 0) opts.onProgress(done);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  running = false;
  await healthLoop;

  durations.sort((a, b) => a - b);
  const hd = [...health.durations].sort((a, b) => a - b);
  return {
    requests: samples.length,
    byStatus,
    violations,
    slowestMs: durations.at(-1) ?? 0,
    slowOnce,
    p99Ms: percentile(durations, 99),
    health: { polls: health.polls, slowestMs: hd.at(-1) ?? 0, p90Ms: percentile(hd, 90), p99Ms: percentile(hd, 99), failures: health.failures, top: hd.slice(-8).map(Math.round) },
    seconds: (performance.now() - started) / 1000,
  };
}

export function describeViolation(v: Violation): string {
  const body = v.request.body === undefined ? "" : ` body=${JSON.stringify(v.request.body.slice(0, 200))}`;
  return `${v.problem}: ${v.request.method} ${v.request.path.slice(0, 200)} → ${v.status} (${Math.round(v.ms)} ms)${body} headers=${JSON.stringify(v.request.headers).slice(0, 300)} answer=${v.body.slice(0, 200)}`;
}
