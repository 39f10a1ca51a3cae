// Hostile input through the real HTTP API: nesting depth, destination URLs the WHATWG parser would rewrite, NUL in
// strings, long request targets and oversized headers, and what the logs keep of a failed query. Each answer must be
// the contract's error, change nothing and leave the rest of the service answering.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { SQL } from "bun";
import { setLogSink } from "../../../common/logger.ts";
import { staticResolver } from "../../../common/ssrf.ts";
import type { SubscriptionJson } from "../../../gateway/render.ts";
import { apiClient, expectError, expectStatus, urlOf, type ApiClient } from "../../support/http.ts";
import { startStack, TEST_HOSTS, type Stack } from "../../support/stack.ts";

let stack: Stack;
let api: ApiClient;
let keyId: string;

const sub = (url: string, extra: Record<string, unknown> = {}) => ({
  destination: { type: "https", url },
  events: ["service.ping"],
  ...extra,
});

beforeAll(async () => {
  stack = await startStack({
    deliverer: true,
    resolver: staticResolver({ ...TEST_HOSTS, "internal.example.com": ["10.1.2.3"] }),
  });
  const key = await stack.createKey();
  keyId = key.id;
  api = apiClient(stack.baseUrl, key.key);
});
afterAll(async () => {
  await stack?.stop();
});

async function subscriptionCount(): Promise<number> {
  const sql = new SQL(stack.database.url, { max: 1 });
  try {
    const [row] = await sql`SELECT count(*)::int AS n FROM subscriptions`;
    return (row as { n: number }).n;
  } finally {
    await sql.close();
  }
}

/** A subscription made for a test that needs an id. */
async function created(): Promise<SubscriptionJson> {
  const res = await api.post("/v1/subscriptions", sub("https://hooks.example.com/h"));
  expectStatus(res, 201);
  return res.json<SubscriptionJson>();
}

describe("nesting depth is bounded before parsing", () => {
  const deep = (n: number) => "[".repeat(n) + "]".repeat(n);

  test("40 KB of nested arrays answers invalid_request in milliseconds while /healthz keeps answering", async () => {
    const id = (await created()).id;
    const bodies: [string, string][] = [
      ["POST", "/v1/subscriptions"],
      ["PUT", `/v1/subscriptions/${id}`],
      ["PATCH", `/v1/subscriptions/${id}/filters/addresses`],
      ["PUT", `/v1/subscriptions/${id}/filters/addresses`],
      ["POST", `/v1/subscriptions/${id}/test`],
      ["POST", `/v1/subscriptions/${id}/secrets/rotate`],
    ];
    const before = await subscriptionCount();
    for (const [method, path] of bodies) {
      let healthSlowest = 0;
      let done = false;
      const poll = (async () => {
        while (!done) {
          const t0 = performance.now();
          expect((await fetch(stack.baseUrl + "/healthz")).status).toBe(200);
          healthSlowest = Math.max(healthSlowest, performance.now() - t0);
          await Bun.sleep(5);
        }
      })();
      const t0 = performance.now();
      const res = await api.request(method, path, { body: deep(20_000) });
      const ms = performance.now() - t0;
      done = true;
      await poll;
      expectError(res, 400, "invalid_request", { param: "/", maxDepth: 32 });
      // Generous for a shared machine; before the bound this took tens of seconds.
      expect(ms).toBeLessThan(1_000);
      expect(healthSlowest).toBeLessThan(1_000);
    }
    expect(await subscriptionCount()).toBe(before);
  });

  test("deep values inside an otherwise valid body: events, kind, 100–200 KB bodies", async () => {
    const id = (await created()).id;
    const nested = (n: number) => JSON.parse(deep(n)) as unknown;
    expectError(await api.post("/v1/subscriptions", sub("https://hooks.example.com/h", { events: nested(10_000) })), 400, "invalid_request");
    expectError(await api.post(`/v1/subscriptions/${id}/test`, { kind: nested(10_000) }), 400, "invalid_request");
    for (const n of [50_000, 100_000]) {
      expectError(await api.post("/v1/subscriptions", deep(n)), 400, "invalid_request", { param: "/", maxDepth: 32 });
      expectError(await api.post("/v1/subscriptions", `{"a":${"{\"a\":".repeat(n / 5)}1${"}".repeat(n / 5)}}`), 400, "invalid_request");
    }
  });

  test("brackets inside strings do not count; 32 levels are accepted", async () => {
    const description = "[[[[{{{{".repeat(50) + '\\"[[';
    const ok = await api.post("/v1/subscriptions", `{"destination":{"type":"https","url":"https://hooks.example.com/h"},"events":["service.ping"],"description":"${description}"}`);
    expectStatus(ok, 201);
    // 32 levels in an ignored field: the body is still a valid request.
    const thirtyTwo = { ...sub("https://hooks.example.com/h"), extra: JSON.parse(deep(31)) as unknown };
    expectStatus(await api.post("/v1/subscriptions", thirtyTwo), 201);
    const thirtyThree = { ...sub("https://hooks.example.com/h"), extra: JSON.parse(deep(32)) as unknown };
    expectError(await api.post("/v1/subscriptions", thirtyThree), 400, "invalid_request", { param: "/", maxDepth: 32 });
  });
});

describe("destination URLs are normalized once; what is stored is what is returned", () => {
  const refused: [string, string][] = [
    [" https://hooks.example.com/a", "must not start or end with white space"],
    ["https://hooks.example.com/a ", "must not start or end with white space"],
    ["https://hooks.example.com/a\n", "must not start or end with white space"],
    ["https://hooks.exa\tmple.com/a", "must not contain control characters (tab, newline, NUL)"],
    ["https://hooks.example.com/a\r\nb", "must not contain control characters (tab, newline, NUL)"],
    ["https:\\\\hooks.example.com\\path", "must not contain a backslash"],
    ["https://hooks.example.com/\ud800", "must be valid Unicode (it contains a lone surrogate)"],
  ];
  for (const [url, reason] of refused) {
    test(`${JSON.stringify(url)} → invalid_request (${reason}) on POST and PUT, nothing stored`, async () => {
      const before = await subscriptionCount();
      const res = await api.post("/v1/subscriptions", sub(url));
      expectError(res, 400, "invalid_request", { param: "/destination/url", reason });
      const existing = await created();
      expectError(await api.put(`/v1/subscriptions/${existing.id}`, sub(url)), 400, "invalid_request", { param: "/destination/url", reason });
      expect(urlOf((await api.get(`/v1/subscriptions/${existing.id}`)).json<SubscriptionJson>())).toBe("https://hooks.example.com/h");
      expect(await subscriptionCount()).toBe(before + 1);
      expectStatus(await api.get("/v1/subscriptions"), 200);
    });
  }

  const normalized: [string, string][] = [
    ["https://hooks.example.com/ü", "https://hooks.example.com/%C3%BC"],
    ["https://hooks.example.com/🔥?q=ü#ü", "https://hooks.example.com/%F0%9F%94%A5?q=%C3%BC#%C3%BC"],
    ["https://ｈｏｏｋｓ.example.com/x", "https://hooks.example.com/x"],
    ["https://HOOKS.Example.COM:443/a/./b/../c", "https://hooks.example.com/a/c"],
    ["https://hooks.example.com", "https://hooks.example.com/"],
  ];
  for (const [input, stored] of normalized) {
    test(`${input} is stored and returned as ${stored} by create, GET, list and PUT`, async () => {
      const res = await api.post("/v1/subscriptions", sub(input));
      expectStatus(res, 201);
      const s = res.json<SubscriptionJson>();
      expect(urlOf(s)).toBe(stored);
      expect(urlOf((await api.get(`/v1/subscriptions/${s.id}`)).json<SubscriptionJson>())).toBe(stored);
      const list = await api.get("/v1/subscriptions?limit=200");
      expectStatus(list, 200);
      expect(urlOf(list.json<{ items: SubscriptionJson[] }>().items.find((i) => i.id === s.id)!)).toBe(stored);
      const put = await api.put(`/v1/subscriptions/${s.id}`, sub(input));
      expectStatus(put, 200);
      expect(urlOf(put.json<SubscriptionJson>())).toBe(stored);
      // The stored form is accepted as it is.
      expect(urlOf((await api.put(`/v1/subscriptions/${s.id}`, sub(stored))).json<SubscriptionJson>())).toBe(stored);
    });
  }

  test("a stored row whose URL a strict check would refuse still renders in GET and list", async () => {
    // A row written before URLs were normalized (or by any other writer).
    const id = "sub_01JZZZZZZZZZZZZZZZZZZZZZZZ";
    const legacy = " https://hooks.example.com/ü\t";
    const sql = new SQL(stack.database.url, { max: 1 });
    try {
      await sql`INSERT INTO subscriptions (id, key_id, url, events, status, description, secret, created_at, updated_at)
        VALUES (${id}, ${keyId}, ${legacy}, ${["service.ping"]}, 'enabled', '', 'v1.unused', now(), now())`;
    } finally {
      await sql.close();
    }
    const get = await api.get(`/v1/subscriptions/${id}`);
    expectStatus(get, 200);
    expect(urlOf(get.json<SubscriptionJson>())).toBe(legacy);
    const list = await api.get("/v1/subscriptions?limit=200");
    expectStatus(list, 200);
    expect(list.json<{ items: SubscriptionJson[] }>().items.some((i) => i.id === id)).toBe(true);
    expectStatus(await api.delete(`/v1/subscriptions/${id}`), 204);
  });

  test("ssrf_blocked says that SSRF_ALLOW_CIDRS exists", async () => {
    const body = expectError(await api.post("/v1/subscriptions", sub("https://internal.example.com/x")), 400, "ssrf_blocked", {
      ip: "10.1.2.3",
      cidr: "10.0.0.0/8",
    });
    expect(body.message).toContain("SSRF_ALLOW_CIDRS");
  });
});

describe("NUL in any string field", () => {
  test("description, URL, events, kind, secret, addresses and member names → invalid_request naming the field", async () => {
    const id = (await created()).id;
    const before = await subscriptionCount();
    expectError(await api.post("/v1/subscriptions", sub("https://hooks.example.com/h", { description: "a\u0000b" })), 400, "invalid_request", { param: "/description" });
    expectError(await api.post("/v1/subscriptions", sub("https://hooks.example.com/\u0000")), 400, "invalid_request", { param: "/destination/url" });
    expectError(await api.post("/v1/subscriptions", { ...sub("https://hooks.example.com/h"), events: ["service.ping\u0000"] }), 400, "invalid_request", { param: "/events/0" });
    expectError(await api.post("/v1/subscriptions", { ...sub("https://hooks.example.com/h"), "x\u0000/~": 1 }), 400, "invalid_request", { param: "/x\u0000~1~0" });
    expectError(await api.put(`/v1/subscriptions/${id}`, sub("https://hooks.example.com/h", { description: "\u0000" })), 400, "invalid_request", { param: "/description" });
    expectError(await api.post(`/v1/subscriptions/${id}/test`, { kind: "service.ping\u0000" }), 400, "invalid_request", { param: "/kind" });
    expectError(await api.post(`/v1/subscriptions/${id}/secrets/rotate`, { secret: "whsec_\u0000" }), 400, "invalid_request", { param: "/secret" });
    expectError(
      await api.request("PATCH", `/v1/subscriptions/${id}/filters/addresses`, { body: { add: [{ chainId: "tron:mainnet", address: "T\u0000" }] } }),
      400,
      "invalid_request",
      { param: "/add/0/address" },
    );
    expect(await subscriptionCount()).toBe(before);
    const got = (await api.get(`/v1/subscriptions/${id}`)).json<SubscriptionJson>();
    expect(got.description).toBe("");
    expect(got.filters.addresses).toEqual([]);
  });
});

describe("a failed query's parameters never reach the log", () => {
  test("an INSERT that PostgreSQL refuses logs the query, not its values (no encrypted secret, URL or description)", async () => {
    const marker = `leak-marker-${Date.now()}`;
    const sql = new SQL(stack.database.url, { max: 1 });
    try {
      await sql.unsafe(`ALTER TABLE subscriptions ADD CONSTRAINT no_marker CHECK (description <> '${marker}')`);
    } finally {
      await sql.close();
    }
    const lines: string[] = [];
    const previous = setLogSink((line) => lines.push(line));
    try {
      const res = await api.post("/v1/subscriptions", sub(`https://hooks.example.com/${marker}`, { description: marker }));
      expect(res.status).toBeGreaterThanOrEqual(500);
    } finally {
      setLogSink(previous);
      const drop = new SQL(stack.database.url, { max: 1 });
      await drop.unsafe("ALTER TABLE subscriptions DROP CONSTRAINT no_marker").finally(() => drop.close());
    }
    const all = lines.join("\n");
    // The failure was logged, with the query text…
    expect(all).toContain("Failed query");
    expect(all).toContain("params: [omitted]");
    // …and none of the values: the description, the URL, the encrypted secret ("v1." + base64url).
    expect(all).not.toContain(marker);
    expect(all).not.toMatch(/v1\.[A-Za-z0-9_-]{40,}/);
  });
});

/** Sends raw bytes and returns the raw answer (status line, headers and body as text). */
function rawRequest(bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(stack.config.port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", reject);
    socket.on("close", () => resolve(Buffer.concat(chunks).toString("latin1")));
    socket.setTimeout(5_000, () => socket.destroy());
    socket.write(bytes, () => socket.end());
  });
}

describe("transport limits", () => {
  test("a request target over 8 KiB → 414 uri_too_long in the error contract, before authentication", async () => {
    const long = "/v1/subscriptions?nextPageToken=" + "a".repeat(8_200);
    expectError(await api.get(long), 414, "uri_too_long", { limit: 8192 });
    expectError(await apiClient(stack.baseUrl).get(long), 414, "uri_too_long");
    expectError(await api.get("/nowhere/" + "x".repeat(9_000)), 414, "uri_too_long");
    // Just under the limit is an ordinary request.
    const under = "/v1/subscriptions?limit=1&pad=" + "a".repeat(8_000);
    expectStatus(await api.get(under), 200);
  });

  test("headers over Bun's 16 KiB → 431 with an empty body (the transport's own answer); 12 KiB is served", async () => {
    expectStatus(await api.get("/v1/subscriptions?limit=1", { headers: { "x-pad": "a".repeat(12_000) } }), 200);
    const answer = await rawRequest(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ${"a".repeat(20_000)}\r\n\r\n`);
    expect(answer).toStartWith("HTTP/1.1 431");
    expect(answer.toLowerCase()).not.toContain("x-request-id");
    // The service is untouched.
    expectStatus(await api.get("/healthz"), 200);
  });

  test("a malformed request line gets Bun's bare 400, and the service keeps answering", async () => {
    const answer = await rawRequest("GET /healthz\u0001 HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(answer).toMatch(/^HTTP\/1\.1 (400|505)/);
    expect(answer.toLowerCase()).not.toContain("x-request-id");
    expectStatus(await api.get("/healthz"), 200);
  });
});
