// OWASP API8:2023 Security Misconfiguration. Proves: no CORS grant to any origin (a page elsewhere cannot read the
// API with a user's key); TRACE and OPTIONS echo nothing and are refused like any unserved method; error answers are
// the contract's four fields, never a stack trace, a file path or a parser's internals; no header advertises the
// server's software; the console is served with a strict CSP (no inline script, no framing) and the docs page loads
// nothing from another origin; and under `npm start` the internal RPC ports are not served and listeners bind
// loopback unless configured. Mechanisms: gateway/app.ts (error contract, method handling), gateway/errors.ts,
// gateway/console.ts (CSP), gateway/docs.ts (self-hosted assets), common/config.ts (INTERNAL_RPC, BIND_HOST).
// Deeper: test/integration/gateway/http-conventions.test.ts, console.browser.test.ts (CSP in a real browser),
// internal-auth.test.ts, start.test.ts, logs.test.ts, api.hostile.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { loadConfig } from "../../common/config.ts";
import { startStack, type Stack, type TestKey } from "../support/stack.ts";

let stack: Stack;
let key: TestKey;

beforeAll(async () => {
  stack = await startStack({ deliverer: { startWorker: false } });
  key = await stack.createKey();
}, 60_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

const authed = () => ({ authorization: `Bearer ${key.key}` });

function expectNoLeak(text: string, headers: Headers): void {
  expect(text).not.toMatch(/\bat .+:\d+:\d+|\.ts\b|node_modules|\/work\/|SyntaxError|TypeError|stack/i);
  expect(headers.get("x-powered-by")).toBeNull();
  expect(headers.get("server") ?? "").not.toMatch(/\d/);
}

describe("cross-origin access", () => {
  test("no Access-Control-Allow-Origin on a preflight or a request from another origin", async () => {
    const origin = "https://evil.example";
    const preflight = await fetch(`${stack.baseUrl}/v1/subscriptions`, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "GET", "access-control-request-headers": "authorization" },
    });
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    expect(preflight.headers.get("access-control-allow-credentials")).toBeNull();
    expect(preflight.status).toBeGreaterThanOrEqual(400);
    const get = await fetch(`${stack.baseUrl}/v1/subscriptions`, { headers: { origin, ...authed() } });
    expect(get.status).toBe(200);
    expect(get.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("methods and errors", () => {
  test("TRACE and OPTIONS with a key: 405 method_not_allowed with Allow, nothing echoed", async () => {
    for (const method of ["TRACE", "OPTIONS"]) {
      const res = await fetch(`${stack.baseUrl}/v1/subscriptions`, { method, headers: { ...authed(), "x-echo-me": "marker-123" } });
      const text = await res.text();
      expect(`${method} ${res.status}`).toBe(`${method} 405`);
      expect(res.headers.get("allow")).toBe("GET, HEAD, POST");
      expect(text).not.toContain("marker-123");
      expect(text).not.toContain(key.key);
      // A TRACE echo would be message/http; the answer is the JSON error (fetch drops a TRACE answer's body).
      expect(res.headers.get("content-type")).toStartWith("application/json");
      if (method === "OPTIONS") expect((JSON.parse(text) as { error: string }).error).toBe("method_not_allowed");
    }
  });

  test("malformed and hostile input answers the four-field error, without internals", async () => {
    const cases: [string, string, string | undefined, Record<string, string>][] = [
      ["POST", "/v1/subscriptions", "{bad", { "content-type": "application/json" }],
      ["POST", "/v1/subscriptions", '{"destination": 1, "events": {}}', { "content-type": "application/json" }],
      ["POST", "/v1/subscriptions", "\u0000\u0001", { "content-type": "application/json" }],
      ["POST", "/v1/subscriptions", "<xml/>", { "content-type": "application/xml" }],
      ["GET", "/v1/subscriptions?limit=abc&nextPageToken=v1:%00%ff", undefined, {}],
      ["GET", "/v1/subscriptions/sub_%00..%2f..%2fetc%2fpasswd", undefined, {}],
      ["GET", "/v1/subscriptions/' OR 1=1 --", undefined, {}],
      ["GET", "/v1/events?since=not-a-date", undefined, {}],
      ["GET", "/../../etc/passwd", undefined, {}],
    ];
    for (const [method, path, body, headers] of cases) {
      const res = await fetch(stack.baseUrl + path, { method, body, headers: { ...authed(), ...headers } });
      const text = await res.text();
      expect(`${method} ${path} ${res.status}`).toMatch(/ 4\d\d$/);
      const parsed = JSON.parse(text) as Record<string, unknown>;
      expect(Object.keys(parsed).sort()).toEqual(["detail", "error", "message", "requestId"]);
      expectNoLeak(text, res.headers);
    }
  });
});

describe("browser-facing pages", () => {
  test("the console is served with a strict CSP, nosniff and no referrer", async () => {
    const res = await fetch(`${stack.baseUrl}/console`);
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy") ?? "";
    for (const directive of ["default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'none'"]) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("unsafe-eval");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    const html = await res.text();
    // No inline script for the CSP to have to allow.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
  });

  test("the docs page and the OpenAPI document load nothing from another origin", async () => {
    const page = await (await fetch(`${stack.baseUrl}/docs`)).text();
    const refs = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect(ref).not.toMatch(/^(https?:)?\/\//);
    for (const ref of refs.filter((r) => r.startsWith("/"))) {
      expect(`${ref} ${(await fetch(stack.baseUrl + ref)).status}`).toBe(`${ref} 200`);
    }
  });
});

describe("defaults of a deployment", () => {
  test("npm start's defaults: internal RPC ports off, listeners on loopback, per-key rate limits on", () => {
    const defaults = loadConfig({});
    expect(defaults.internalRpc).toEqual({ registry: false, deliverer: false });
    expect(defaults.bindHost).toBe("127.0.0.1");
    expect(defaults.rateLimitRps).toBeGreaterThan(0);
    expect(defaults.unknownKeyRateLimitRps).toBeGreaterThan(0);
    expect(defaults.ssrfAllowCidrs).toEqual([]);
  });
});
