// OWASP API3:2023 Broken Object Property Level Authorization. Proves: a client cannot write properties it does not
// own (mass assignment: id, keyId, dates, filters, a signing secret on create, an event's id/status/subscription on
// test), cannot use a chain its key lacks, and reads no property it should not: the signing secret appears only in the
// create and rotate answers, and no answer carries internal fields (key ids, hashes, encrypted secrets, broker
// credentials). Mechanisms: the gateway's input schemas pass only named fields to the registry and the deliverer
// (gateway/routes/subscriptions/shared.ts, subscriptionFields), the renderers list exactly the contract's fields (gateway/render.ts),
// per-key chains in the registry.
// Deeper: test/integration/gateway/subscriptions.security.test.ts, brokers.security.test.ts (queue destinations only within
// the key's granted namespace), secrets-rotate.test.ts, idempotency.test.ts (a replayed secret is stored encrypted).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, startEventsStack, type EventsStack } from "../support/events.ts";

let env: EventsStack;
let base: string;

beforeAll(async () => {
  env = await startEventsStack();
  base = env.stack.baseUrl;
}, 60_000);

afterAll(async () => {
  await env?.stop();
}, 60_000);

const SUBSCRIPTION_FIELDS = ["dateCreated", "dateUpdated", "description", "destination", "events", "filters", "id", "match", "status"];
const FOREIGN_SECRET = "whsec_" + Buffer.alloc(32, 7).toString("base64");
const ADDRESS = "TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7";

type Sub = { id: string; status: string; dateCreated: string; destination: { url: string; secret?: string }; filters: { addresses: unknown[] } };

describe("mass assignment is ignored", () => {
  test("create: id, keyId, dates, filters, a secret and counters in the body change nothing but the named fields", async () => {
    const victim = await env.stack.createKey();
    const { key } = await env.stack.createKey();
    const t0 = Date.now();
    const res = await call<Sub & Record<string, unknown>>(base, key, "POST", "/v1/subscriptions", {
      destination: { type: "https", url: env.receiver.url("/mass"), secret: FOREIGN_SECRET },
      events: ["service.ping"],
      id: "sub_01J00000000000000000000000",
      keyId: victim.id,
      key_id: victim.id,
      secret: FOREIGN_SECRET,
      dateCreated: "2001-01-01T00:00:00.000Z",
      dateUpdated: "2001-01-01T00:00:00.000Z",
      filters: { addresses: [{ chainId: "tron:mainnet", address: ADDRESS }] },
      deliveryCount: 99,
    });
    expect(res.status).toBe(201);
    const sub = res.body;
    expect(sub.id).not.toBe("sub_01J00000000000000000000000");
    expect(Date.parse(sub.dateCreated)).toBeGreaterThanOrEqual(t0 - 1_000);
    expect(sub.filters.addresses).toEqual([]);
    expect(sub.destination.secret).toMatch(/^whsec_/);
    expect(sub.destination.secret).not.toBe(FOREIGN_SECRET);
    expect(Object.keys(sub).sort()).toEqual(SUBSCRIPTION_FIELDS);
    // It belongs to the caller, not to the key named in the body.
    expect((await call(base, key, "GET", `/v1/subscriptions/${sub.id}`)).status).toBe(200);
    expect((await call(base, victim.key, "GET", `/v1/subscriptions/${sub.id}`)).status).toBe(404);
    expect((await call<{ items: unknown[] }>(base, victim.key, "GET", "/v1/subscriptions")).body.items).toEqual([]);
    // Nothing written went to the watch index either: the subscription has no addresses.
    const addrs = await call<{ items: unknown[] }>(base, key, "GET", `/v1/subscriptions/${sub.id}/filters/addresses`);
    expect(addrs.body.items).toEqual([]);
  });

  test("replace: id, keyId and dateCreated in a PUT body are ignored", async () => {
    const other = await env.stack.createKey();
    const { key } = await env.stack.createKey();
    const made = (await call<Sub>(base, key, "POST", "/v1/subscriptions", { destination: { type: "https", url: env.receiver.url("/put") }, events: ["service.ping"] })).body;
    const res = await call<Sub>(base, key, "PUT", `/v1/subscriptions/${made.id}`, {
      destination: { type: "https", url: env.receiver.url("/put2"), secret: FOREIGN_SECRET },
      events: ["service.ping"],
      id: "sub_01J00000000000000000000001",
      keyId: other.id,
      dateCreated: "2001-01-01T00:00:00.000Z",
    });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(made.id);
    expect(res.body.dateCreated).toBe(made.dateCreated);
    expect(res.body.destination.secret).toBeUndefined();
    expect((await call(base, other.key, "GET", `/v1/subscriptions/${made.id}`)).status).toBe(404);
    expect((await call(base, key, "GET", "/v1/subscriptions/sub_01J00000000000000000000001")).status).toBe(404);
  });

  test("a test event: id, status, subscriptionId, attempts and payload in the body are ignored", async () => {
    const { key } = await env.stack.createKey();
    const mine = (await call<Sub>(base, key, "POST", "/v1/subscriptions", { destination: { type: "https", url: env.receiver.url("/ev") }, events: ["service.ping"] })).body;
    const { key: otherKey } = await env.stack.createKey();
    const theirs = (await call<Sub>(base, otherKey, "POST", "/v1/subscriptions", { destination: { type: "https", url: env.receiver.url("/ev2") }, events: ["service.ping"] })).body;
    const res = await call<{ id: string; subscriptionId: string; status: string; attempts: number; deliveryCount: number; payload: { data: unknown; subscriptionId: string } }>(
      base, key, "POST", `/v1/subscriptions/${mine.id}/test`,
      { id: "evt_01J00000000000000000000000", status: "delivered", subscriptionId: theirs.id, attempts: 7, deliveryCount: 3, payload: { data: { forged: true } } },
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ subscriptionId: mine.id, status: "pending", attempts: 0, deliveryCount: 0, payload: { subscriptionId: mine.id } });
    expect(res.body.id).not.toBe("evt_01J00000000000000000000000");
    expect(JSON.stringify(res.body.payload.data)).not.toContain("forged");
    const theirEvents = await call<{ items: unknown[] }>(base, otherKey, "GET", `/v1/subscriptions/${theirs.id}/events`);
    expect(theirEvents.body.items).toEqual([]);
  });

  test("a chain the key does not have cannot be written (PATCH skips it, PUT refuses it)", async () => {
    const { key } = await env.stack.createKey({ chains: ["tron:nile"] });
    const sub = (await call<Sub>(base, key, "POST", "/v1/subscriptions", { destination: { type: "https", url: env.receiver.url("/chain") }, events: ["service.ping"] })).body;
    const patch = await call<{ results: { added: unknown[]; skipped: unknown[] } }>(base, key, "PATCH", `/v1/subscriptions/${sub.id}/filters/addresses`, {
      add: [{ chainId: "tron:mainnet", address: ADDRESS }],
    });
    expect(patch.status).toBe(200);
    expect(patch.body.results.added).toEqual([]);
    expect(JSON.stringify(patch.body.results.skipped)).toContain("chain_not_enabled");
    const listed = await call<{ items: unknown[] }>(base, key, "GET", `/v1/subscriptions/${sub.id}/filters/addresses`);
    expect(listed.body.items).toEqual([]);
    const put = await call<{ error: string }>(base, key, "PUT", `/v1/subscriptions/${sub.id}/filters/addresses`, [{ chainId: "tron:mainnet", address: ADDRESS }]);
    expect([put.status, put.body.error]).toEqual([400, "chain_not_enabled"]);
  });
});

describe("the signing secret is shown on create and rotate only; no internal field is ever shown", () => {
  test("every read and write answer but create and rotate is free of secrets and internal fields", async () => {
    const k = await env.stack.createKey();
    const created = await call<Sub>(base, k.key, "POST", "/v1/subscriptions", { destination: { type: "https", url: env.receiver.url("/sec") }, events: ["service.ping"] });
    const secret = created.body.destination.secret!;
    const id = created.body.id;
    const rotated = await call<Sub>(base, k.key, "POST", `/v1/subscriptions/${id}/secrets/rotate`);
    expect(rotated.body.destination.secret).toMatch(/^whsec_/);
    const newSecret = rotated.body.destination.secret!;
    const ev = await call<{ id: string }>(base, k.key, "POST", `/v1/subscriptions/${id}/test`);
    const answers = [
      await call(base, k.key, "GET", `/v1/subscriptions/${id}`),
      await call(base, k.key, "GET", "/v1/subscriptions"),
      await call(base, k.key, "PUT", `/v1/subscriptions/${id}`, { destination: { type: "https", url: env.receiver.url("/sec") }, events: ["service.ping"] }),
      await call(base, k.key, "PATCH", `/v1/subscriptions/${id}/filters/addresses`, { add: [{ chainId: "tron:mainnet", address: ADDRESS }] }),
      await call(base, k.key, "PUT", `/v1/subscriptions/${id}/filters/addresses`, [{ chainId: "tron:mainnet", address: ADDRESS }]),
      await call(base, k.key, "GET", `/v1/subscriptions/${id}/filters/addresses`),
      ev,
      await call(base, k.key, "GET", `/v1/subscriptions/${id}/events`),
      await call(base, k.key, "GET", `/v1/subscriptions/${id}/events/${ev.body.id}`),
      await call(base, k.key, "GET", `/v1/subscriptions/${id}/events/${ev.body.id}/attempts`),
      await call(base, k.key, "GET", `/v1/subscriptions/${id}/health`),
      await call(base, k.key, "GET", "/v1/events"),
    ];
    for (const a of answers) {
      expect(a.status).toBeLessThan(300);
      const text = JSON.stringify(a.body);
      expect(text).not.toContain("whsec_");
      expect(text).not.toContain(secret.slice(6));
      expect(text).not.toContain(newSecret.slice(6));
      expect(text).not.toContain(k.id);
      expect(text).not.toMatch(/"(keyId|key_id|secretHash|secret_hash|secretEnc|encryptedSecret|previousSecret)"/);
      // Encrypted-at-rest values ("v1." + base64url) never leave the service.
      expect(text).not.toMatch(/"v1\.[A-Za-z0-9_-]{20,}/);
    }
    const got = answers[0]!.body as Record<string, unknown>;
    expect(Object.keys(got).sort()).toEqual(SUBSCRIPTION_FIELDS);
    expect(Object.keys(got.destination as object).sort()).toEqual(["type", "url"]);
  });
});
