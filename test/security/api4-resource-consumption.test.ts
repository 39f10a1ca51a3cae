// OWASP API4:2023 Unrestricted Resource Consumption. Proves, on one small stack with low limits: a body over 1 MiB is
// refused (413) before it is parsed; one request carries at most 10,000 addresses and a subscription at most its
// configured total (addresses_limit_exceeded, nothing applied); every list is capped at 200 items whatever `limit`
// asks; a key past its burst gets 429 rate_limited with Retry-After; a flood of made-up keys from one address gets 429
// without a registry lookup each; and a destination's compressed answer is stored as at most 4,096 bytes.
// Mechanisms: gateway/body.ts, the registry's address limits, queryPageLimit, gateway/rate-limit.ts,
// gateway/client-limit.ts, deliverer/answer-body.ts.
// Deeper: test/integration/gateway/http-conventions.test.ts (body and rate limits), api.hostile.test.ts (nesting depth,
// header and URL sizes), api.flood.test.ts, gateway-auth.test.ts, deliverer.bombs.test.ts (64 MiB bombs, memory
// bound), addresses.error.test.ts, queues.batch.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { hexToBase58 } from "../../common/tron-address.ts";
import { call, startEventsStack, type EventsStack } from "../support/events.ts";
import { until } from "../support/wait.ts";

const PER_SUBSCRIPTION = 300;
let env: EventsStack;
let base: string;
// Seen valid before the flood: a key known valid is never held to the limit on unknown keys' lookups.
let known: { id: string; key: string };

beforeAll(async () => {
  env = await startEventsStack({
    env: {
      RATE_LIMIT_RPS: "1",
      RATE_LIMIT_BURST: "30",
      UNKNOWN_KEY_RATE_LIMIT_RPS: "1",
      UNKNOWN_KEY_RATE_LIMIT_BURST: "30",
      MAX_ADDRESSES_PER_SUBSCRIPTION: String(PER_SUBSCRIPTION),
    },
  });
  base = env.stack.baseUrl;
  known = await env.stack.createKey();
  expect((await call(base, known.key, "GET", "/v1/subscriptions")).status).toBe(200);
}, 60_000);

afterAll(async () => {
  await env?.stop();
}, 60_000);

const generated = (n: number) =>
  Array.from({ length: n }, () => ({ chainId: "tron:mainnet", address: hexToBase58("41" + randomBytes(20).toString("hex")) }));

async function subscription(key: string, url = env.receiver.url("/rc")): Promise<string> {
  const res = await call<{ id: string }>(base, key, "POST", "/v1/subscriptions", { destination: { type: "https", url }, events: ["service.ping"] });
  expect(res.status).toBe(201);
  return res.body.id;
}

describe("sizes", () => {
  test("a body over 1 MiB is 413 payload_too_large and creates nothing", async () => {
    const { key } = await env.stack.createKey();
    const res = await call<{ error: string }>(base, key, "POST", "/v1/subscriptions", {
      destination: { type: "https", url: env.receiver.url("/big") },
      events: ["service.ping"],
      description: "x".repeat(1024 * 1024 + 1),
    });
    expect([res.status, res.body.error]).toEqual([413, "payload_too_large"]);
    expect((await call<{ items: unknown[] }>(base, key, "GET", "/v1/subscriptions")).body.items).toEqual([]);
  });

  test("10,001 addresses in one request, or past the per-subscription total, apply nothing", async () => {
    const { key } = await env.stack.createKey();
    const id = await subscription(key);
    const path = `/v1/subscriptions/${id}/filters/addresses`;
    const tooMany = await call<{ error: string }>(base, key, "PATCH", path, { add: generated(10_001) });
    expect([tooMany.status, tooMany.body.error]).toEqual([400, "addresses_limit_exceeded"]);
    const putTooMany = await call<{ error: string }>(base, key, "PUT", path, generated(10_001));
    expect([putTooMany.status, putTooMany.body.error]).toEqual([400, "addresses_limit_exceeded"]);
    const pastTotal = await call<{ error: string }>(base, key, "PUT", path, generated(PER_SUBSCRIPTION + 1));
    expect([pastTotal.status, pastTotal.body.error]).toEqual([400, "addresses_limit_exceeded"]);
    expect((await call<{ items: unknown[] }>(base, key, "GET", path)).body.items).toEqual([]);
  });

  test("a list asked for a million items answers at most 200, with a next page", async () => {
    const { key } = await env.stack.createKey();
    const id = await subscription(key);
    const path = `/v1/subscriptions/${id}/filters/addresses`;
    expect((await call(base, key, "PUT", path, generated(250))).status).toBe(200);
    const page = await call<{ items: unknown[]; nextPageToken: string | null }>(base, key, "GET", `${path}?limit=1000000`);
    expect(page.status).toBe(200);
    expect(page.body.items).toHaveLength(200);
    expect(page.body.nextPageToken).toStartWith("v1:");
    for (const list of ["/v1/subscriptions", `/v1/subscriptions/${id}/events`, "/v1/events"]) {
      expect((await call(base, key, "GET", `${list}?limit=1000000`)).status).toBe(200);
      expect((await call<{ error: string }>(base, key, "GET", `${list}?limit=0`)).body.error).toBe("invalid_request");
    }
  });
});

describe("a destination's answer", () => {
  let bomb: Server;
  afterAll(() => bomb?.close());

  test("a gzip bomb (16 MiB inflated) is stored as at most 4,096 bytes", async () => {
    const compressed = gzipSync(Buffer.alloc(16 * 2 ** 20, "a"), { level: 9 });
    bomb = createServer({ cert: env.pki.cert, key: env.pki.key }, (req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip", "content-length": String(compressed.length) });
        res.end(compressed);
      });
    });
    await new Promise<void>((resolve) => bomb.listen(0, "127.0.0.1", resolve));
    const { key } = await env.stack.createKey();
    const id = await subscription(key, `https://localhost:${(bomb.address() as AddressInfo).port}/bomb`);
    const ev = await call<{ id: string }>(base, key, "POST", `/v1/subscriptions/${id}/test`);
    expect(ev.status).toBe(200);
    const done = await until("the bomb's attempt recorded", async () => {
      const res = await call<{ status: string; responseBody: string | null; responseStatus: number | null }>(base, key, "GET", `/v1/subscriptions/${id}/events/${ev.body.id}`);
      return res.body.status !== "pending" ? res.body : null;
    }, 30_000);
    expect(done.status).toBe("delivered");
    expect(done.responseStatus).toBe(200);
    expect(Buffer.byteLength(done.responseBody ?? "")).toBeLessThanOrEqual(4096);
  });
});

// Last: these exhaust the per-key burst and this client address's allowance for unknown keys.
describe("request rates", () => {
  test("past its burst a key gets 429 rate_limited with Retry-After; another key is unaffected", async () => {
    const a = await env.stack.createKey();
    const b = await env.stack.createKey();
    expect((await call(base, b.key, "GET", "/v1/subscriptions")).status).toBe(200);
    const statuses: number[] = [];
    let limited: Awaited<ReturnType<typeof call<{ error: string }>>> | undefined;
    for (let i = 0; i < 40 && !limited; i++) {
      const res = await call<{ error: string }>(base, a.key, "GET", "/v1/subscriptions");
      statuses.push(res.status);
      if (res.status === 429) limited = res;
    }
    expect(limited?.body.error).toBe("rate_limited");
    expect(Number(limited!.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(29);
    expect((await call(base, b.key, "GET", "/v1/subscriptions")).status).toBe(200);
  });

  test("a flood of made-up keys from one address is 429 after its burst; a key known valid still works", async () => {
    // All at once: each refusal is answered only after its Retry-After (gateway/refusal-pace.ts).
    const statuses = await Promise.all(
      Array.from({ length: 60 }, async () => (await call(base, "whk_" + randomBytes(32).toString("base64url"), "GET", "/v1/subscriptions")).status),
    );
    expect(statuses).toContain(401);
    expect(statuses).toContain(429);
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
    expect((await call(base, known.key, "GET", "/v1/subscriptions")).status).toBe(200);
  });
});
