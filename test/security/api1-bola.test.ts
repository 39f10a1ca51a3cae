// OWASP API1:2023 Broken Object Level Authorization. Proves: every route that names an object (subscription, event,
// its addresses, attempts, health, test, retry, recover, rotate, the event search's subscription filter) answers
// another key's ids exactly as it answers an id that never existed (404 not_found, same body but the requestId), and
// changes nothing of the owner's. The ownership check lives in the gateway (`owned`, gateway/routes) and again in the
// registry and the deliverer against the registry's record, so a caller cannot vouch for a key.
// Deeper: test/integration/deliverer/ownership.test.ts (the deliverer's own check, RPC level),
// subscriptions.security.test.ts, pagination.test.ts (tokens of another key), operations.test.ts (search scoping).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, startEventsStack, type EventsStack } from "../support/events.ts";

let env: EventsStack;
let base: string;
let owner: { key: string; subId: string; eventId: string };
let intruder: { key: string; subId: string };

// A well-formed ULID that nobody issued: the "does not exist" baseline.
const MISSING_SUB = "sub_01J00000000000000000000000";
const MISSING_EVT = "evt_01J00000000000000000000000";

beforeAll(async () => {
  env = await startEventsStack();
  base = env.stack.baseUrl;
  const mk = async (path: string) => {
    const { key } = await env.stack.createKey();
    const res = await call<{ id: string }>(base, key, "POST", "/v1/subscriptions", {
      destination: { type: "https", url: env.receiver.url(path) },
      events: ["wallet.transfer.broadcasted"],
    });
    expect(res.status).toBe(201);
    return { key, subId: res.body.id };
  };
  const o = await mk("/bola-owner");
  intruder = await mk("/bola-intruder");
  const added = await call(base, o.key, "PATCH", `/v1/subscriptions/${o.subId}/filters/addresses`, {
    add: [{ chainId: "tron:mainnet", address: "TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7" }],
  });
  expect(added.status).toBe(200);
  const ev = await call<{ id: string }>(base, o.key, "POST", `/v1/subscriptions/${o.subId}/test`);
  expect(ev.status).toBe(200);
  owner = { ...o, eventId: ev.body.id };
}, 60_000);

afterAll(async () => {
  await env?.stop();
}, 60_000);

type Route = [method: string, path: (sub: string, evt: string) => string, body?: unknown];
const ROUTES: Route[] = [
  ["GET", (s) => `/v1/subscriptions/${s}`],
  ["PUT", (s) => `/v1/subscriptions/${s}`, { destination: { type: "https", url: "https://hooks.example.com/x" }, events: ["service.ping"] }],
  ["DELETE", (s) => `/v1/subscriptions/${s}`],
  ["POST", (s) => `/v1/subscriptions/${s}/secrets/rotate`],
  ["GET", (s) => `/v1/subscriptions/${s}/filters/addresses`],
  ["PATCH", (s) => `/v1/subscriptions/${s}/filters/addresses`, { remove: [{ chainId: "tron:mainnet", address: "TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7" }] }],
  ["PUT", (s) => `/v1/subscriptions/${s}/filters/addresses`, []],
  ["POST", (s) => `/v1/subscriptions/${s}/test`],
  ["GET", (s) => `/v1/subscriptions/${s}/events`],
  ["GET", (s, e) => `/v1/subscriptions/${s}/events/${e}`],
  ["POST", (s, e) => `/v1/subscriptions/${s}/events/${e}/retry`],
  ["GET", (s, e) => `/v1/subscriptions/${s}/events/${e}/attempts`],
  ["POST", (s) => `/v1/subscriptions/${s}/events/recover`, { since: new Date(Date.now() - 3_600_000).toISOString(), status: "delivered" }],
  ["GET", (s) => `/v1/subscriptions/${s}/health`],
  ["GET", (s) => `/v1/events?subscriptionId=${s}`],
];

/** The error body without its per-request id: what a caller can compare between two answers. */
const shape = (r: { status: number; body: unknown }): Record<string, unknown> => {
  const { requestId: _, ...rest } = (r.body ?? {}) as Record<string, unknown>;
  return { status: r.status, ...rest };
};

async function ownerState() {
  const sub = await call(base, owner.key, "GET", `/v1/subscriptions/${owner.subId}`);
  const evt = await call(base, owner.key, "GET", `/v1/subscriptions/${owner.subId}/events/${owner.eventId}`);
  const events = await call<{ items: unknown[] }>(base, owner.key, "GET", `/v1/subscriptions/${owner.subId}/events`);
  return { sub: sub.body, status: (evt.body as { status: string }).status, count: events.body.items.length };
}

describe("another key's objects are indistinguishable from objects that do not exist", () => {
  for (const [method, path, body] of ROUTES) {
    test(`${method} ${path(":id", ":eventId")}`, async () => {
      const foreign = await call(base, intruder.key, method, path(owner.subId, owner.eventId), body);
      const missing = await call(base, intruder.key, method, path(MISSING_SUB, MISSING_EVT), body);
      expect(shape(foreign)).toEqual({ status: 404, error: "not_found", message: expect.any(String), detail: null });
      expect(shape(foreign)).toEqual(shape(missing));
      // The owner's event under the intruder's own subscription: an event id is only found under its owner.
      if (path(":s", ":e").includes(":e")) {
        const crossed = await call(base, intruder.key, method, path(intruder.subId, owner.eventId), body);
        const ownMissing = await call(base, intruder.key, method, path(intruder.subId, MISSING_EVT), body);
        expect(shape(crossed)).toEqual({ status: 404, error: "not_found", message: expect.any(String), detail: null });
        expect(shape(crossed)).toEqual(shape(ownMissing));
      }
    });
  }

  test("none of those calls changed the owner's subscription, addresses or events", async () => {
    const state = await ownerState();
    expect(state.sub).toMatchObject({ id: owner.subId, status: "enabled", filters: { addresses: [{ chainId: "tron:mainnet" }] } });
    expect(state.count).toBe(1);
    // The owner still reaches everything (the control: the 404s were about the key, not the ids).
    for (const [method, path] of ROUTES.filter(([m]) => m === "GET")) {
      const res = await call(base, owner.key, method, path(owner.subId, owner.eventId));
      expect(`${method} ${path(owner.subId, owner.eventId)} ${res.status}`).toEndWith(" 200");
    }
  });

  test("the key-wide search never lists another key's events", async () => {
    const res = await call<{ items: { id: string }[] }>(base, intruder.key, "GET", "/v1/events?limit=200");
    expect(res.status).toBe(200);
    expect(res.body.items.map((e) => e.id)).not.toContain(owner.eventId);
  });
});
