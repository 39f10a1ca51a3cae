// Per-key quotas through the HTTP API (issue 30, item 4): the operator's defaults (QUOTA_*), a key's own overrides,
// 403 quota_exceeded with {quota, limit} and nothing applied, concurrent writes of one key never passing the cap
// together; and the rate limit weighing a request by its cost (RateLimit-Remaining falls by the cost).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { call, startEventsStack, type EventsStack } from "../../support/events.ts";

let env: EventsStack;
let base: string;

beforeAll(async () => {
  env = await startEventsStack({
    env: {
      QUOTA_SUBSCRIPTIONS: "3",
      QUOTA_ADDRESSES: "50",
      // Nothing refills while a slow machine runs the file: every token a request takes shows in RateLimit-Remaining.
      RATE_LIMIT_RPS: "0.001",
      RATE_LIMIT_BURST: "1000",
    },
  });
  base = env.stack.baseUrl;
}, 60_000);

afterAll(async () => {
  await env?.stop();
}, 60_000);

const generated = (n: number) =>
  Array.from({ length: n }, () => ({ chainId: "tron:mainnet", address: hexToBase58("41" + randomBytes(20).toString("hex")) }));

async function subscription(key: string): Promise<string> {
  const res = await call<{ id: string }>(base, key, "POST", "/v1/subscriptions", {
    destination: { type: "https", url: env.receiver.url("/q") },
    events: ["service.ping"],
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function addressCount(id: string): Promise<number> {
  const rows = await env.stack.registry.store.db.$client`SELECT address_count AS n FROM subscriptions WHERE id = ${id}`;
  return (rows[0] as { n: number }).n;
}

describe("subscriptions", () => {
  test("past the default a create is 403 quota_exceeded with {quota, limit}; a delete frees a place", async () => {
    const { key } = await env.stack.createKey();
    const ids = [await subscription(key), await subscription(key), await subscription(key)];
    const over = await call<{ error: string; detail: unknown }>(base, key, "POST", "/v1/subscriptions", {
      destination: { type: "https", url: env.receiver.url("/q") },
      events: ["service.ping"],
    });
    expect([over.status, over.body.error, over.body.detail]).toEqual([403, "quota_exceeded", { quota: "subscriptions", limit: 3 }]);
    expect((await call<{ items: unknown[] }>(base, key, "GET", "/v1/subscriptions")).body.items).toHaveLength(3);
    expect((await call(base, key, "DELETE", `/v1/subscriptions/${ids[0]}`)).status).toBe(204);
    await subscription(key);
  });

  test("a key's own quota wins over the default", async () => {
    const { id, key } = await env.stack.createKey();
    await env.stack.registry.store.setApiKeyQuotas(id, { subscriptions: 1 });
    await subscription(key);
    const over = await call<{ error: string; detail: unknown }>(base, key, "POST", "/v1/subscriptions", {
      destination: { type: "https", url: env.receiver.url("/q") },
      events: ["service.ping"],
    });
    expect([over.status, over.body.detail]).toEqual([403, { quota: "subscriptions", limit: 1 }]);
    await env.stack.registry.store.setApiKeyQuotas(id, { subscriptions: 5 });
    await subscription(key);
  });

  test("ten creates at once under a quota of 3: exactly 3 pass", async () => {
    const { key } = await env.stack.createKey();
    const statuses = await Promise.all(
      Array.from({ length: 10 }, () =>
        call(base, key, "POST", "/v1/subscriptions", { destination: { type: "https", url: env.receiver.url("/q") }, events: ["service.ping"] }).then(
          (r) => r.status,
        ),
      ),
    );
    expect(statuses.filter((s) => s === 201)).toHaveLength(3);
    expect(statuses.filter((s) => s === 403)).toHaveLength(7);
  });
});

describe("addresses", () => {
  test("the key's total over all its subscriptions is capped; PATCH and PUT past it apply nothing; removals pass", async () => {
    const { key } = await env.stack.createKey();
    const [a, b] = [await subscription(key), await subscription(key)];
    const first = generated(30);
    expect((await call(base, key, "PUT", `/v1/subscriptions/${a}/filters/addresses`, first)).status).toBe(200);
    const over = await call<{ error: string; detail: unknown }>(base, key, "PATCH", `/v1/subscriptions/${b}/filters/addresses`, { add: generated(21) });
    expect([over.status, over.body.error, over.body.detail]).toEqual([403, "quota_exceeded", { quota: "addresses", limit: 50 }]);
    expect(await addressCount(b)).toBe(0);
    expect((await call(base, key, "PATCH", `/v1/subscriptions/${b}/filters/addresses`, { add: generated(20) })).status).toBe(200);
    // Full: a PUT that grows the list is refused, one that keeps or shrinks it passes.
    const putOver = await call<{ error: string; detail: unknown }>(base, key, "PUT", `/v1/subscriptions/${a}/filters/addresses`, generated(31));
    expect([putOver.status, putOver.body.detail]).toEqual([403, { quota: "addresses", limit: 50 }]);
    expect(await addressCount(a)).toBe(30);
    expect((await call(base, key, "PUT", `/v1/subscriptions/${a}/filters/addresses`, first.slice(0, 20))).status).toBe(200);
    expect((await call(base, key, "PATCH", `/v1/subscriptions/${b}/filters/addresses`, { remove: first.slice(0, 1) })).status).toBe(200);
    // 40 of 50 now: two PATCHes of 10 to two subscriptions at once, and only one passes.
    const c = await subscription(key);
    const both = await Promise.all(
      [b, c].map((id) => call(base, key, "PATCH", `/v1/subscriptions/${id}/filters/addresses`, { add: generated(10) }).then((r) => r.status)),
    );
    expect(both.sort()).toEqual([200, 403]);
    expect((await addressCount(a)) + (await addressCount(b)) + (await addressCount(c))).toBe(50);
  });

  test("a key's own address quota wins over the default", async () => {
    const { id, key } = await env.stack.createKey();
    await env.stack.registry.store.setApiKeyQuotas(id, { addresses: 5 });
    const sub = await subscription(key);
    const over = await call<{ detail: unknown }>(base, key, "PATCH", `/v1/subscriptions/${sub}/filters/addresses`, { add: generated(6) });
    expect([over.status, over.body.detail]).toEqual([403, { quota: "addresses", limit: 5 }]);
  });
});

describe("rate limit cost", () => {
  const remaining = (r: { headers: Headers }) => Number(r.headers.get("ratelimit-remaining"));

  test("a plain request takes 1 token, a recover 20, a body 1 more per started 64 KiB beyond the first", async () => {
    const { key } = await env.stack.createKey();
    const sub = await subscription(key);
    const r0 = remaining(await call(base, key, "GET", "/v1/subscriptions"));
    const r1 = remaining(await call(base, key, "GET", "/v1/subscriptions"));
    expect(r0 - r1).toBe(1);
    const recover = await call(base, key, "POST", `/v1/subscriptions/${sub}/events/recover`, { since: new Date(Date.now() - 60_000).toISOString() });
    expect(recover.status).toBe(202);
    expect(r1 - remaining(recover)).toBe(20);
    // 10,000 addresses: about 740 KB, 12 tokens (refused by the address quota, and charged all the same).
    const body = JSON.stringify({ add: generated(10_000) });
    const patch = await call(base, key, "PATCH", `/v1/subscriptions/${sub}/filters/addresses`, body);
    expect(patch.status).toBe(403);
    expect(remaining(recover) - remaining(patch)).toBe(1 + Math.floor((Buffer.byteLength(body) - 1) / 65_536));
    expect(1 + Math.floor((Buffer.byteLength(body) - 1) / 65_536)).toBeGreaterThanOrEqual(10);
  });
});
