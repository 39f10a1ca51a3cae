// OWASP API9:2023 Improper Inventory Management. Proves: the OpenAPI document served at /openapi.json is the exact
// inventory of the API: every route the gateway serves is in it and every operation in it is served, except a short,
// named list of pages that are not API (docs, console and their assets, the document itself); every /v1 operation
// declares bearer security and answers 401 without a key; there is one version (/v1): no other version prefix, no
// unversioned alias of a /v1 route, and no debug or framework route (swagger, elysia's defaults) answers.
// Mechanisms: gateway/app.ts mounts only gateway/routes plus the docs and console plugins; gateway/docs.ts builds the
// document from the same route table.
// Deeper: test/integration/gateway/http-conventions.test.ts (document shapes), openapi.test.ts (error codes per operation,
// examples, redocly lint, webhooks section).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startStack, type Stack, type TestKey } from "../support/stack.ts";

/** Served but not API: pages for people and the document itself. Adding a route here is a deliberate choice. */
const NOT_API = ["get /openapi.json", "get /docs", "get /docs/assets/{file}", "get /console", "get /console/", "get /console/{file}"];

let stack: Stack;
let key: TestKey;
type Op = { security?: unknown[] };
let doc: { openapi: string; paths: Record<string, Record<string, Op>> };

beforeAll(async () => {
  stack = await startStack({ deliverer: { startWorker: false } });
  key = await stack.createKey();
  const res = await fetch(`${stack.baseUrl}/openapi.json`);
  expect(res.status).toBe(200);
  doc = (await res.json()) as typeof doc;
}, 60_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

const documented = () => Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`)).sort();
const served = () => stack.gateway.routes.map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, "{$1}")}`);

describe("the document is the inventory", () => {
  test("served routes = documented operations + the named pages, both ways", () => {
    const api = served().filter((r) => !NOT_API.includes(r)).sort();
    expect(api).toEqual(documented());
    // Every page on the list is still served (a stale entry would hide a removed page from review).
    for (const page of NOT_API) expect(served()).toContain(page);
  });

  test("every documented operation answers (no 404 or 405 from routing) and every /v1 one is 401 without a key", async () => {
    const sample = (path: string) =>
      path.replace("{id}", "sub_01J00000000000000000000000").replace("{eventId}", "evt_01J00000000000000000000000").replace("{backfillId}", "bf_01J00000000000000000000000");
    for (const entry of documented()) {
      const [method, path] = entry.split(" ") as [string, string];
      const url = stack.baseUrl + sample(path);
      const anonymous = await fetch(url, { method: method.toUpperCase() });
      if (path.startsWith("/v1/")) {
        expect(`${entry} ${anonymous.status}`).toBe(`${entry} 401`);
        expect(doc.paths[path]![method]!.security).toEqual([{ bearer: [] }]);
        const withKey = await fetch(url, { method: method.toUpperCase(), headers: { authorization: `Bearer ${key.key}` } });
        const body = withKey.status === 204 ? {} : ((await withKey.json()) as { error?: string; message?: string });
        // A 404 here must be about the sample id, never "No such resource" (an unrouted path); never a 405.
        expect(`${entry} ${withKey.status} ${body.message ?? ""}`).not.toMatch(/ 405 | 404 No such resource/);
      } else {
        expect(`${entry} ${anonymous.status}`).not.toMatch(/ 40[45]$/);
      }
    }
  });
});

describe("one version, no shadow routes", () => {
  test("other versions, unversioned aliases and framework or debug routes are 404 not_found", async () => {
    const paths = [
      "/v0/subscriptions", "/v2/subscriptions", "/v1beta/subscriptions", "/api/v1/subscriptions", "/subscriptions",
      "/V1/subscriptions", "/v1.0/subscriptions", "/events", "/swagger", "/swagger.json", "/openapi.yaml",
      "/openapi/json", "/docs/json", "/swagger/json", "/debug", "/debug/pprof", "/status", "/health", "/env", "/config",
    ];
    for (const path of paths) {
      const res = await fetch(stack.baseUrl + path, { headers: { authorization: `Bearer ${key.key}` } });
      const body = (await res.json()) as { error: string };
      expect(`${path} ${res.status} ${body.error}`).toBe(`${path} 404 not_found`);
    }
  });

  test("the document names one server and one version", () => {
    expect(doc.openapi).toStartWith("3.");
    const prefixes = new Set(Object.keys(doc.paths).map((p) => p.split("/")[1]));
    expect([...prefixes].sort()).toEqual(["healthz", "metrics", "readyz", "v1"]);
  });
});
