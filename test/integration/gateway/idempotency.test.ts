// Idempotency-Key on POST /v1/subscriptions and rotate (docs/CONTRACT.md "Idempotency"): replays, conflicts, in-flight,
// scope (key, method, path), key validation, and errors releasing the key.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { SubscriptionJson } from "../../../gateway/render.ts";
import { apiClient, expectError, expectStatus, type ApiClient } from "../../support/http.ts";
import { startStack, TEST_DESTINATION, type Stack } from "../../support/stack.ts";
import { subscriptionSecretBinding } from "../../../registry/sealed-columns.ts";

let stack: Stack;
let api: ApiClient;
let keyId: string;

const body = (description = "") => ({ destination: { type: "https", url: TEST_DESTINATION }, events: ["service.ping"], description });
let counter = 0;
const newKey = () => `idem-${Date.now()}-${counter++}`;

beforeAll(async () => {
  stack = await startStack();
  const key = await stack.createKey();
  keyId = key.id;
  api = apiClient(stack.baseUrl, key.key);
});
afterAll(async () => {
  await stack?.stop();
});

async function countRows(): Promise<number> {
  const rows = await stack.registry.store.db.$client`SELECT count(*)::int AS n FROM subscriptions WHERE key_id = ${keyId}`;
  return (rows[0] as { n: number }).n;
}

describe("create with Idempotency-Key", () => {
  test("the same key and body replay the stored 201 unchanged (secret included) with Idempotent-Replayed and a new X-Request-Id", async () => {
    const k = newKey();
    const before = await countRows();
    const first = await api.post("/v1/subscriptions", body("once"), { headers: { "idempotency-key": k } });
    expectStatus(first, 201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const again = await api.post("/v1/subscriptions", body("once"), { headers: { "idempotency-key": k } });
    expectStatus(again, 201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.text).toBe(first.text);
    expect(again.json<SubscriptionJson>().destination.secret).toStartWith("whsec_");
    expect(again.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"));
    expect(await countRows()).toBe(before + 1);
  });

  test("key order and white space do not matter: a reordered body replays", async () => {
    const k = newKey();
    const first = await api.post("/v1/subscriptions", '{"destination":{"type":"https","url":"' + TEST_DESTINATION + '"},"events":["service.ping"],"description":"order"}', {
      headers: { "idempotency-key": k },
    });
    expectStatus(first, 201);
    const reordered = `{ "description" : "order",
      "events": [ "service.ping" ],
      "destination": { "url": "${TEST_DESTINATION}", "type": "https" } }`;
    const again = await api.post("/v1/subscriptions", reordered, { headers: { "idempotency-key": k } });
    expectStatus(again, 201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.json<SubscriptionJson>().id).toBe(first.json<SubscriptionJson>().id);
  });

  test("the same key with a different body → 409 idempotency_conflict, nothing created", async () => {
    const k = newKey();
    expectStatus(await api.post("/v1/subscriptions", body("a"), { headers: { "idempotency-key": k } }), 201);
    const before = await countRows();
    expectError(await api.post("/v1/subscriptions", body("b"), { headers: { "idempotency-key": k } }), 409, "idempotency_conflict", null);
    // An unknown field changes the request too: bodies compare as sent.
    expectError(await api.post("/v1/subscriptions", { ...body("a"), extra: 1 }, { headers: { "idempotency-key": k } }), 409, "idempotency_conflict");
    expect(await countRows()).toBe(before);
  });

  test("an error keeps no record: the key is released and a fixed request with it succeeds", async () => {
    const k = newKey();
    expectError(await api.post("/v1/subscriptions", { ...body(), events: ["nope"] }, { headers: { "idempotency-key": k } }), 400, "unsupported_event");
    expectError(await api.post("/v1/subscriptions", { ...body(), destination: { type: "https", url: "https://10.0.0.1/" } }, { headers: { "idempotency-key": k } }), 400, "ssrf_blocked");
    const fixed = await api.post("/v1/subscriptions", body("fixed"), { headers: { "idempotency-key": k } });
    expectStatus(fixed, 201);
    expect(fixed.headers.get("idempotent-replayed")).toBeNull();
  });

  test("20 concurrent creates with one key → exactly one subscription; every answer is it (201) or in flight (409)", async () => {
    const k = newKey();
    const before = await countRows();
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => api.post("/v1/subscriptions", body("concurrent"), { headers: { "idempotency-key": k } })),
    );
    expect(await countRows()).toBe(before + 1);
    const ok = responses.filter((r) => r.status === 201);
    const inFlight = responses.filter((r) => r.status === 409);
    expect(ok.length + inFlight.length).toBe(20);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(new Set(ok.map((r) => r.json<SubscriptionJson>().id)).size).toBe(1);
    expect(ok.filter((r) => r.headers.get("idempotent-replayed") === null).length).toBeLessThanOrEqual(1);
    for (const r of inFlight) expectError(r, 409, "idempotency_in_flight", null);
    // Once settled, the key replays.
    const after = await api.post("/v1/subscriptions", body("concurrent"), { headers: { "idempotency-key": k } });
    expectStatus(after, 201);
    expect(after.headers.get("idempotent-replayed")).toBe("true");
    expect(after.json<SubscriptionJson>().id).toBe(ok[0]!.json<SubscriptionJson>().id);
  });

  test("while the first request holds the key → 409 idempotency_in_flight; once it is done, the key works", async () => {
    // Hold the lock the registry takes for (key, method + path, Idempotency-Key), as a request still running would.
    const k = newKey();
    const sql = stack.registry.store.db.$client;
    const holder = await sql.reserve();
    try {
      await holder`BEGIN`;
      const [row] = await holder`SELECT pg_try_advisory_xact_lock(hashtextextended(${`${keyId}
POST /v1/subscriptions
${k}`}, 0)) AS ok`;
      expect((row as { ok: boolean }).ok).toBe(true);
      const before = await countRows();
      expectError(await api.post("/v1/subscriptions", body("held"), { headers: { "idempotency-key": k } }), 409, "idempotency_in_flight", null);
      expect(await countRows()).toBe(before);
      await holder`COMMIT`;
    } finally {
      holder.release();
    }
    const res = await api.post("/v1/subscriptions", body("held"), { headers: { "idempotency-key": k } });
    expectStatus(res, 201);
    expect(res.headers.get("idempotent-replayed")).toBeNull();
  });

  test("scope is the API key: another key with the same Idempotency-Key creates its own", async () => {
    const k = newKey();
    const other = apiClient(stack.baseUrl, (await stack.createKey()).key);
    const a = await api.post("/v1/subscriptions", body("scoped"), { headers: { "idempotency-key": k } });
    const b = await other.post("/v1/subscriptions", body("scoped"), { headers: { "idempotency-key": k } });
    expectStatus(a, 201);
    expectStatus(b, 201);
    expect(b.headers.get("idempotent-replayed")).toBeNull();
    expect(b.json<SubscriptionJson>().id).not.toBe(a.json<SubscriptionJson>().id);
  });

  test("without the header, each request creates", async () => {
    const before = await countRows();
    expectStatus(await api.post("/v1/subscriptions", body("plain")), 201);
    expectStatus(await api.post("/v1/subscriptions", body("plain")), 201);
    expect(await countRows()).toBe(before + 2);
  });
});

describe("Idempotency-Key validation", () => {
  test.each([
    ["empty", ""],
    ["256 characters", "k".repeat(256)],
    ["a tab inside", "a\tb"],
    ["non-ASCII", "clé"],
  ])("%s → 400 invalid_request (param Idempotency-Key), nothing created", async (_name, value) => {
    const before = await countRows();
    const res = await fetch(`${stack.baseUrl}/v1/subscriptions`, {
      method: "POST",
      headers: [
        ["authorization", `Bearer ${(await stack.createKey()).key}`],
        ["content-type", "application/json"],
        ["idempotency-key", value],
      ],
      body: JSON.stringify(body()),
    });
    const text = await res.text();
    expect(`${res.status} ${text}`).toStartWith("400 ");
    expect(JSON.parse(text)).toMatchObject({ error: "invalid_request", detail: { param: "Idempotency-Key" } });
    expect(await countRows()).toBe(before);
  });

  test("255 printable characters (spaces and symbols included) are accepted", async () => {
    const k = (" !~" + "x".repeat(252)).slice(0, 255);
    expectStatus(await api.post("/v1/subscriptions", body(), { headers: { "idempotency-key": k } }), 201);
  });
});

describe("rotate with Idempotency-Key", () => {
  test("a replay returns the same new secret and rotates once; the key is scoped to the subscription's path", async () => {
    const sub = (await api.post("/v1/subscriptions", body())).json<SubscriptionJson>();
    const k = newKey();
    const first = await api.request("POST", `/v1/subscriptions/${sub.id}/secrets/rotate`, { headers: { "idempotency-key": k } });
    expectStatus(first, 200);
    const again = await api.post(`/v1/subscriptions/${sub.id}/secrets/rotate`, {}, { headers: { "idempotency-key": k } });
    expectStatus(again, 200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.text).toBe(first.text);
    const row = await stack.registry.store.db.$client`SELECT secret, previous_secret FROM subscriptions WHERE id = ${sub.id}`;
    const stored = row[0] as { secret: string; previous_secret: string };
    expect(stack.registry.store.open(stored.secret, subscriptionSecretBinding(sub.id))).toBe(first.json<SubscriptionJson>().destination.secret!);
    // Rotated once: the previous secret is still the one from creation.
    expect(stack.registry.store.open(stored.previous_secret, subscriptionSecretBinding(sub.id))).toBe(sub.destination.secret!);

    expectError(await api.post(`/v1/subscriptions/${sub.id}/secrets/rotate`, { gracePeriodSeconds: 0 }, { headers: { "idempotency-key": k } }), 409, "idempotency_conflict");

    // The same key on another path (create) is another scope.
    const created = await api.post("/v1/subscriptions", body(), { headers: { "idempotency-key": k } });
    expectStatus(created, 201);
    expect(created.headers.get("idempotent-replayed")).toBeNull();
  });
});
