// docs/CONTRACT.md "HTTP conventions": request ids, unknown paths and methods, body size and media type, rate limits
// (and failing open without Redis), operational endpoints, and the OpenAPI document with its offline docs page.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openRedis } from "../../../common/redis.ts";
import { inProcessTransport } from "../../../common/rpc.ts";
import { createGatewayApp } from "../../../gateway/app.ts";
import type { SubscriptionJson } from "../../../gateway/render.ts";
import { apiClient, expectError, expectStatus, type ApiClient } from "../../support/http.ts";
import { startStack, TEST_DESTINATION, type Stack } from "../../support/stack.ts";
import { startTcpProxy } from "../../support/tcp-proxy.ts";

let stack: Stack;
let api: ApiClient;
let key: string;

const body = () => ({ destination: { type: "https", url: TEST_DESTINATION }, events: ["service.ping"] });
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

beforeAll(async () => {
  stack = await startStack();
  key = (await stack.createKey()).key;
  api = apiClient(stack.baseUrl, key);
});
afterAll(async () => {
  await stack?.stop();
});

describe("X-Request-Id", () => {
  test("a sane incoming id is echoed, on success and on errors", async () => {
    const id = "client-req_42.A";
    const ok = await api.get("/v1/subscriptions", { headers: { "x-request-id": id } });
    expect(ok.headers.get("x-request-id")).toBe(id);
    const err = await api.get("/v1/subscriptions/sub_nope", { headers: { "x-request-id": id } });
    expect(expectError(err, 404, "not_found").requestId).toBe(id);
    const anon = await apiClient(stack.baseUrl).get("/v1/subscriptions", { headers: { "x-request-id": id } });
    expect(expectError(anon, 401, "unauthorized").requestId).toBe(id);
  });

  test.each([
    ["too long", "a".repeat(129)],
    ["with a space", "a b"],
    ["with a slash", "a/b"],
    ["with a quote", 'a"b'],
  ])("an insane one (%s) is replaced by a generated id", async (_name, id) => {
    const res = await api.get("/v1/subscriptions/sub_nope", { headers: { "x-request-id": id } });
    const requestId = expectError(res, 404, "not_found").requestId;
    expect(requestId).toMatch(UUID);
  });

  test("every response carries one, each request its own", async () => {
    const created = (await api.post("/v1/subscriptions", body())).json<SubscriptionJson>();
    const responses = [
      await api.get("/v1/subscriptions"),
      await api.delete(`/v1/subscriptions/${created.id}`),
      await apiClient(stack.baseUrl).get("/nothing"),
      await apiClient(stack.baseUrl).get("/healthz"),
      await apiClient(stack.baseUrl).get("/openapi.json"),
      await apiClient(stack.baseUrl).get("/docs"),
    ];
    const ids = responses.map((r) => r.headers.get("x-request-id"));
    for (const id of ids) expect(id).toMatch(UUID);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe("unknown paths and methods", () => {
  test("an unknown path is 404 not_found, inside /v1 (authenticated) and outside it", async () => {
    expectError(await api.get("/v1/nothing"), 404, "not_found", null);
    expectError(await api.get("/v1/subscriptions/sub_01HZZZZZZZZZZZZZZZZZZZZZZZ/nothing"), 404, "not_found", null);
    expectError(await apiClient(stack.baseUrl).request("POST", "/"), 404, "not_found", null);
  });

  test.each([
    ["PATCH", "/v1/subscriptions", "GET, HEAD, POST"],
    ["DELETE", "/v1/subscriptions", "GET, HEAD, POST"],
    ["POST", "/v1/subscriptions/sub_01HZZZZZZZZZZZZZZZZZZZZZZZ", "DELETE, GET, HEAD, PUT"],
    ["GET", "/v1/subscriptions/sub_01HZZZZZZZZZZZZZZZZZZZZZZZ/secrets/rotate", "POST"],
    ["POST", "/healthz", "GET, HEAD"],
    // A literal route beside a parameter route of the same shape: the literal one decides (not "malformed event id").
    ["GET", "/v1/subscriptions/sub_01HZZZZZZZZZZZZZZZZZZZZZZZ/events/recover", "POST"],
    ["PUT", "/v1/subscriptions/sub_01HZZZZZZZZZZZZZZZZZZZZZZZ/events/recover", "POST"],
    ["POST", "/v1/events", "GET, HEAD"],
    ["POST", "/v1/subscriptions/sub_01HZZZZZZZZZZZZZZZZZZZZZZZ/events/evt_01HZZZZZZZZZZZZZZZZZZZZZZZ/attempts", "GET, HEAD"],
    ["OPTIONS", "/v1/subscriptions", "GET, HEAD, POST"],
  ])("%s %s → 405 method_not_allowed with Allow: %s", async (method, path, allow) => {
    const res = await api.request(method, path);
    expectError(res, 405, "method_not_allowed", null);
    expect(res.headers.get("allow")).toBe(allow);
  });
});

describe("request bodies", () => {
  test("over 1 MiB with a Content-Length → 413 payload_too_large, nothing created", async () => {
    const before = (await api.get("/v1/subscriptions?limit=200")).json<{ items: unknown[] }>().items.length;
    const big = JSON.stringify({ ...body(), description: "x".repeat(1024 * 1024) });
    expectError(await api.post("/v1/subscriptions", big), 413, "payload_too_large");
    expect((await api.get("/v1/subscriptions?limit=200")).json<{ items: unknown[] }>().items.length).toBe(before);
  });

  test("over 1 MiB streamed without a Content-Length → 413 payload_too_large", async () => {
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 20) return controller.close();
        sent++;
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(`${stack.baseUrl}/v1/subscriptions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: stream,
    });
    const text = await res.text();
    expect(res.status).toBe(413);
    expect(JSON.parse(text).error).toBe("payload_too_large");
  });

  test("just under 1 MiB is read (and judged on its content)", async () => {
    const padding = 1024 * 1024 - 200;
    const res = await api.post("/v1/subscriptions", JSON.stringify({ ...body(), description: "x".repeat(padding) }));
    expectError(res, 400, "description_too_long");
  });

  test("a body without application/json → 415 unsupported_media_type", async () => {
    const json = JSON.stringify(body());
    expectError(await api.request("POST", "/v1/subscriptions", { body: json, headers: { "content-type": "text/plain" } }), 415, "unsupported_media_type", null);
    expectError(await api.request("POST", "/v1/subscriptions", { body: json, headers: { "content-type": "application/x-www-form-urlencoded" } }), 415, "unsupported_media_type");
    const bare = await fetch(`${stack.baseUrl}/v1/subscriptions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: new Blob([json]),
    });
    expect(bare.status).toBe(415);
    const created = (await api.post("/v1/subscriptions", body())).json<SubscriptionJson>();
    expectError(
      await api.request("POST", `/v1/subscriptions/${created.id}/secrets/rotate`, { body: "{}", headers: { "content-type": "text/plain" } }),
      415,
      "unsupported_media_type",
    );
  });

  test("application/json with parameters and in any case is accepted", async () => {
    const json = JSON.stringify(body());
    expectStatus(await api.request("POST", "/v1/subscriptions", { body: json, headers: { "content-type": "application/json; charset=utf-8" } }), 201);
    expectStatus(await api.request("POST", "/v1/subscriptions", { body: json, headers: { "content-type": "Application/JSON" } }), 201);
  });

  test("invalid UTF-8 is invalid_request", async () => {
    const bytes = new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]);
    const res = await fetch(`${stack.baseUrl}/v1/subscriptions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: bytes,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe("invalid_request");
  });
});

describe("rate limiting per API key", () => {
  let limited: Stack;
  beforeAll(async () => {
    // One request per 100 s after a burst of 3: nothing refills while a slow machine runs the test. Redis gets 5 s
    // to answer: past the 250 ms default a loaded machine's request passes unlimited, without the headers asserted.
    limited = await startStack({ env: { RATE_LIMIT_RPS: "0.01", RATE_LIMIT_BURST: "3" }, rateLimitTimeoutMs: 5_000 });
  });
  afterAll(async () => {
    await limited?.stop();
  });

  test("the burst passes with RateLimit headers counting down; then 429 rate_limited with Retry-After; other keys are unaffected", async () => {
    const a = apiClient(limited.baseUrl, (await limited.createKey()).key);
    const b = apiClient(limited.baseUrl, (await limited.createKey()).key);
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await a.get("/v1/subscriptions");
      expectStatus(res, 200);
      expect(res.headers.get("ratelimit-limit")).toBe("3");
      remaining.push(res.headers.get("ratelimit-remaining")!);
      expect(Number(res.headers.get("ratelimit-reset"))).toBeGreaterThanOrEqual(1);
    }
    expect(remaining).toEqual(["2", "1", "0"]);
    const res = await a.post("/v1/subscriptions", body());
    expectError(res, 429, "rate_limited");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(res.headers.get("ratelimit-limit")).toBe("3");
    expect(res.headers.get("ratelimit-remaining")).toBe("0");
    expect(Number(res.headers.get("ratelimit-reset"))).toBeGreaterThanOrEqual(1);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(90);
    // Nothing was created by the refused request.
    const rows = await limited.registry.store.db.$client`SELECT count(*)::int AS n FROM subscriptions`;
    expect((rows[0] as { n: number }).n).toBe(0);
    expectStatus(await b.get("/v1/subscriptions"), 200);
  });

  test("RateLimit headers come with error responses under /v1 too", async () => {
    const c = apiClient(limited.baseUrl, (await limited.createKey()).key);
    const res = await c.get("/v1/nothing");
    expectError(res, 404, "not_found");
    expect(res.headers.get("ratelimit-remaining")).toBe("2");
  });

  test("without Redis the limiter fails open: requests pass, without RateLimit headers; /readyz shows Redis and stays ready", async () => {
    const deadRedis = openRedis("redis://127.0.0.1:1", { retryStrategy: () => 1_000 });
    deadRedis.on("error", () => {});
    const gateway = createGatewayApp({
      config: { ...limited.config, rateLimitRps: 1, rateLimitBurst: 1 },
      registry: inProcessTransport(limited.registry.routes),
      redis: deadRedis,
    });
    gateway.listen({ port: 0, hostname: "127.0.0.1" });
    try {
      const client = apiClient(`http://127.0.0.1:${gateway.server!.port}`, (await limited.createKey()).key);
      for (let i = 0; i < 5; i++) {
        const res = await client.get("/v1/subscriptions");
        expectStatus(res, 200);
        expect(res.headers.get("ratelimit-limit")).toBeNull();
      }
      expectStatus(await client.post("/v1/subscriptions", body()), 201);
      const ready = await client.get("/readyz");
      expect(ready.status).toBe(200);
      expect(ready.json<{ checks: Record<string, boolean>; informational: Record<string, boolean> }>()).toMatchObject({
        status: "ready",
        checks: { registry: true },
        informational: { redis: false },
      });
    } finally {
      await gateway.stop(true);
      deadRedis.disconnect();
    }
  });
});

describe("rate limiting with a Redis that stops answering", () => {
  test("a frozen Redis connection lets requests through after a short wait, without RateLimit headers", async () => {
    const proxy = await startTcpProxy({ hostname: "127.0.0.1", port: 6379 });
    const viaProxy = openRedis(`redis://127.0.0.1:${proxy.port}/${stack.redis.db}`);
    viaProxy.on("error", () => {});
    const gateway = createGatewayApp({
      config: { ...stack.config, rateLimitRps: 1, rateLimitBurst: 2 },
      registry: inProcessTransport(stack.registry.routes),
      redis: viaProxy,
    });
    gateway.listen({ port: 0, hostname: "127.0.0.1" });
    try {
      const client = apiClient(`http://127.0.0.1:${gateway.server!.port}`, key);
      for (let i = 0; i < 100 && viaProxy.status !== "ready"; i++) await Bun.sleep(20);
      const limited = await client.get("/v1/subscriptions");
      expectStatus(limited, 200);
      expect(limited.headers.get("ratelimit-limit")).toBe("2");
      proxy.freeze();
      for (let i = 0; i < 4; i++) {
        const started = performance.now();
        const res = await client.get("/v1/subscriptions");
        expectStatus(res, 200);
        expect(res.headers.get("ratelimit-limit")).toBeNull();
        expect(performance.now() - started).toBeLessThan(2_000);
      }
    } finally {
      await gateway.stop(true);
      viaProxy.disconnect();
      await proxy.close();
    }
  });
});

describe("operational endpoints (no authentication)", () => {
  test("/healthz, /readyz with its checks, /metrics with request counters and latency", async () => {
    const anon = apiClient(stack.baseUrl);
    const health = await anon.get("/healthz");
    expectStatus(health, 200);
    expect(health.json()).toEqual({ status: "ok" });
    const ready = await anon.get("/readyz");
    expectStatus(ready, 200);
    expect(ready.json()).toEqual({ status: "ready", checks: { registry: true }, informational: { redis: true } });
    await api.get("/v1/subscriptions");
    await anon.get("/v1/subscriptions");
    const metrics = await anon.get("/metrics");
    expectStatus(metrics, 200);
    expect(metrics.text).toMatch(/gateway_http_requests_total\{method="GET",route="\/v1\/subscriptions",status="200"\} \d+/);
    expect(metrics.text).toContain('gateway_http_request_duration_seconds_bucket{le="0.005",method="GET",route="/v1/subscriptions"}');
    // Answers given before routing (authentication, rate limit) are counted too.
    expect(metrics.text).toMatch(/gateway_http_requests_total\{method="GET",route="unauthenticated",status="401"\} \d+/);
  });
});

describe("OpenAPI document and docs page", () => {
  test("/openapi.json lists every route the gateway serves, with schemas, and bearer security on /v1", async () => {
    const res = await apiClient(stack.baseUrl).get("/openapi.json");
    expectStatus(res, 200);
    type Op = { security?: unknown[]; requestBody?: unknown; parameters?: { name: string; in: string }[]; responses?: Record<string, unknown> };
    const doc = res.json<{ openapi: string; paths: Record<string, Record<string, Op>>; components: { securitySchemes: Record<string, unknown> } }>();
    expect(doc.openapi).toStartWith("3.");
    expect(doc.components.securitySchemes.bearer).toBeDefined();
    const served = stack.gateway.routes
      .filter((r) => r.path.startsWith("/v1/") || ["/healthz", "/readyz", "/metrics"].includes(r.path))
      .map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, "{$1}")}`);
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`));
    expect(served.length).toBeGreaterThanOrEqual(6);
    expect(documented.sort()).toEqual(expect.arrayContaining(served.sort()));
    const ops = doc.paths;
    type Body = { required: boolean; content: Record<string, { schema: { properties?: Record<string, unknown>; additionalProperties?: boolean } }> };
    const createBody = ops["/v1/subscriptions"]!.post!.requestBody as Body;
    expect(createBody.required).toBe(true);
    expect(Object.keys(createBody.content)).toEqual(["application/json"]);
    expect(Object.keys(createBody.content["application/json"]!.schema.properties!).sort()).toEqual(["description", "destination", "events", "match", "status"]);
    expect(createBody.content["application/json"]!.schema.additionalProperties).toBe(true);
    expect((ops["/v1/subscriptions/{id}"]!.put!.requestBody as Body).required).toBe(true);
    const rotateBody = ops["/v1/subscriptions/{id}/secrets/rotate"]!.post!.requestBody as Body;
    expect(rotateBody.required).toBe(false);
    expect(Object.keys(rotateBody.content["application/json"]!.schema.properties!).sort()).toEqual(["gracePeriodSeconds", "secret"]);
    expect(ops["/v1/subscriptions/{id}"]!.delete!.responses!["204"]).toEqual({ description: "Deleted; no body." });
    expect(ops["/v1/subscriptions"]!.get!.parameters!.map((p) => p.name).sort()).toEqual(["limit", "nextPageToken"]);
    expect(Object.keys(ops["/v1/subscriptions"]!.post!.responses!)).toEqual(expect.arrayContaining(["201", "400", "401", "409"]));
    for (const [path, byMethod] of Object.entries(ops)) {
      if (!path.startsWith("/v1/")) continue;
      for (const op of Object.values(byMethod)) expect(op.security).toEqual([{ bearer: [] }]);
    }
  });

  test("/docs references only assets the gateway serves itself", async () => {
    const res = await apiClient(stack.baseUrl).get("/docs");
    expectStatus(res, 200);
    expect(res.headers.get("content-type")).toStartWith("text/html");
    expect(res.text).not.toMatch(/(?:src|href)\s*=\s*["'](?:https?:)?\/\//i);
    expect(res.text).not.toMatch(/unpkg|jsdelivr|cdnjs/i);
    const assets = [...res.text.matchAll(/(?:src|href)\s*=\s*"([^"]+)"/g)].map((m) => m[1]!);
    expect(assets).toEqual(expect.arrayContaining(["/docs/assets/swagger-ui-bundle.js", "/docs/assets/swagger-ui.css"]));
    for (const asset of assets) {
      const got = await fetch(new URL(asset, stack.baseUrl));
      expect(got.status).toBe(200);
      expect((await got.arrayBuffer()).byteLength).toBeGreaterThan(100);
    }
    expect(res.text).toContain('"url":"/openapi.json"');
    expectStatus(await apiClient(stack.baseUrl).get("/docs/"), 200);
    expectError(await apiClient(stack.baseUrl).get("/docs/assets/../../package.json"), 404, "not_found");
    expectError(await apiClient(stack.baseUrl).get("/docs/assets/index.html"), 404, "not_found");
  });
});
