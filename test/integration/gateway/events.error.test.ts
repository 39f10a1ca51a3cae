// Errors of the event API: the contract's codes, and nothing changes. Foreign and malformed ids are not_found.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, startEventsStack, type EventsStack } from "../../support/events.ts";

type ErrorBody = { error: string; message: string; detail: Record<string, unknown> | null; requestId: string };
type Ev = { id: string; status: string; attempts: number };

let env: EventsStack;
let base: string;

beforeAll(async () => {
  env = await startEventsStack();
  base = env.stack.baseUrl;
}, 60_000);

afterAll(async () => {
  await env?.stop();
}, 60_000);

async function setup(path: string, status?: string) {
  const { key } = await env.stack.createKey();
  const created = await call<{ id: string }>(base, key, "POST", "/v1/subscriptions", {
    destination: { type: "https", url: env.receiver.url(path) },
    events: ["service.ping"],
    ...(status ? { status } : {}),
  });
  expect(created.status).toBe(201);
  return { key, id: created.body.id };
}

function expectError(res: { status: number; headers: Headers; body: unknown }, status: number, code: string): ErrorBody {
  const body = res.body as ErrorBody;
  expect(res.status).toBe(status);
  expect(body.error).toBe(code);
  expect(Object.keys(body).sort()).toEqual(["detail", "error", "message", "requestId"]);
  expect(body.requestId).toBe(res.headers.get("x-request-id")!);
  return body;
}

async function eventCount(key: string, id: string): Promise<number> {
  return (await call<{ items: unknown[] }>(base, key, "GET", `/v1/subscriptions/${id}/events?limit=200`)).body.items.length;
}

describe("test events", () => {
  test("a disabled subscription: 409 subscription_disabled, no event", async () => {
    const s = await setup("/err-disabled", "disabled");
    expectError(await call(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`), 409, "subscription_disabled");
    expect(await eventCount(s.key, s.id)).toBe(0);
    expect(env.receiver.count("/err-disabled")).toBe(0);
  });

  test("an unknown kind: 400 unsupported_event naming it; a wrong type: 400 invalid_request", async () => {
    const s = await setup("/err-kind");
    const bad = expectError(await call(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`, { kind: "wallet.transfer.pending" }), 400, "unsupported_event");
    expect(bad.detail).toEqual({ event: "wallet.transfer.pending" });
    const typed = expectError(await call(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`, { kind: 7 }), 400, "invalid_request");
    expect(typed.detail).toMatchObject({ param: "/kind" });
    expect(await eventCount(s.key, s.id)).toBe(0);
  });

  test("a body that is not JSON: 415; malformed JSON: 400", async () => {
    const s = await setup("/err-media");
    expectError(await call(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`, "kind=x", { "content-type": "text/plain" }), 415, "unsupported_media_type");
    expectError(await call(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`, "{nope"), 400, "invalid_request");
    expect(await eventCount(s.key, s.id)).toBe(0);
  });
});

describe("ownership and ids", () => {
  test("another key's subscription and events are not_found on every event endpoint", async () => {
    const owner = await setup("/err-owner");
    const ev = (await call<Ev>(base, owner.key, "POST", `/v1/subscriptions/${owner.id}/test`)).body;
    const { key: stranger } = await env.stack.createKey();
    expectError(await call(base, stranger, "POST", `/v1/subscriptions/${owner.id}/test`), 404, "not_found");
    expectError(await call(base, stranger, "GET", `/v1/subscriptions/${owner.id}/events`), 404, "not_found");
    expectError(await call(base, stranger, "GET", `/v1/subscriptions/${owner.id}/events/${ev.id}`), 404, "not_found");
    expectError(await call(base, stranger, "POST", `/v1/subscriptions/${owner.id}/events/${ev.id}/retry`), 404, "not_found");
    // The stranger's own subscription does not reach the owner's event either.
    const theirs = await setup("/err-theirs");
    expectError(await call(base, theirs.key, "GET", `/v1/subscriptions/${theirs.id}/events/${ev.id}`), 404, "not_found");
    expectError(await call(base, theirs.key, "POST", `/v1/subscriptions/${theirs.id}/events/${ev.id}/retry`), 404, "not_found");
    expect(await eventCount(owner.key, owner.id)).toBe(1);
  });

  test("malformed subscription or event ids are 404, never 400 or 500", async () => {
    const s = await setup("/err-ids");
    expectError(await call(base, s.key, "POST", `/v1/subscriptions/sub_bad/test`), 404, "not_found");
    expectError(await call(base, s.key, "GET", `/v1/subscriptions/xyz/events`), 404, "not_found");
    expectError(await call(base, s.key, "GET", `/v1/subscriptions/${s.id}/events/evt_nope`), 404, "not_found");
    expectError(await call(base, s.key, "POST", `/v1/subscriptions/${s.id}/events/123/retry`), 404, "not_found");
    expectError(await call(base, s.key, "GET", `/v1/subscriptions/${s.id}/events/evt_01JZZZZZZZZZZZZZZZZZZZZZZZ`), 404, "not_found");
  });

  test("without a key: 401 before anything else", async () => {
    const s = await setup("/err-auth");
    const res = await call(base, undefined, "POST", `/v1/subscriptions/${s.id}/test`);
    expectError(res, 401, "unauthorized");
    expect(await eventCount(s.key, s.id)).toBe(0);
  });
});

describe("retry", () => {
  test("a pending event: 409 event_not_retryable; on a disabled subscription: 409 subscription_disabled", async () => {
    const s = await setup("/err-retry");
    env.receiver.setBehaviour("/err-retry", { kind: "hang" });
    const ev = (await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`)).body;
    expectError(await call(base, s.key, "POST", `/v1/subscriptions/${s.id}/events/${ev.id}/retry`), 409, "event_not_retryable");

    const d = await setup("/err-retry-disabled");
    const done = (await call<Ev>(base, d.key, "POST", `/v1/subscriptions/${d.id}/test`)).body;
    const deadline = Date.now() + 10_000;
    while ((await call<Ev>(base, d.key, "GET", `/v1/subscriptions/${d.id}/events/${done.id}`)).body.status !== "delivered") {
      if (Date.now() > deadline) throw new Error("not delivered");
      await Bun.sleep(25);
    }
    const put = await call(base, d.key, "PUT", `/v1/subscriptions/${d.id}`, {
      destination: { type: "https", url: env.receiver.url("/err-retry-disabled") }, events: ["service.ping"], status: "disabled",
    });
    expect(put.status).toBe(200);
    expectError(await call(base, d.key, "POST", `/v1/subscriptions/${d.id}/events/${done.id}/retry`), 409, "subscription_disabled");
    const after = (await call<Ev & { deliveryCount: number }>(base, d.key, "GET", `/v1/subscriptions/${d.id}/events/${done.id}`)).body;
    expect(after.status).toBe("delivered");
    expect(after.deliveryCount).toBe(1);
  });

  test("a failed retry releases the Idempotency-Key (only 2xx are kept)", async () => {
    const s = await setup("/err-retry-key");
    env.receiver.setBehaviour("/err-retry-key", { kind: "hang" });
    const ev = (await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`)).body;
    const headers = { "idempotency-key": "k-409" };
    expectError(await call(base, s.key, "POST", `/v1/subscriptions/${s.id}/events/${ev.id}/retry`, undefined, headers), 409, "event_not_retryable");
    const again = await call(base, s.key, "POST", `/v1/subscriptions/${s.id}/events/${ev.id}/retry`, undefined, headers);
    expect(again.headers.get("idempotent-replayed")).toBeNull();
    expectError(again, 409, "event_not_retryable");
  });
});

describe("list parameters", () => {
  test("limit below 1 or not an integer, an unknown status, a tampered or foreign token: 400", async () => {
    const s = await setup("/err-list");
    for (let i = 0; i < 3; i++) await call(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`);
    expectError(await call(base, s.key, "GET", `/v1/subscriptions/${s.id}/events?limit=0`), 400, "invalid_request");
    expectError(await call(base, s.key, "GET", `/v1/subscriptions/${s.id}/events?limit=1.5`), 400, "invalid_request");
    const st = expectError(await call(base, s.key, "GET", `/v1/subscriptions/${s.id}/events?status=lost`), 400, "invalid_request");
    expect(st.detail).toMatchObject({ param: "status" });
    const page = await call<{ items: unknown[]; nextPageToken: string }>(base, s.key, "GET", `/v1/subscriptions/${s.id}/events?limit=1`);
    const token = page.body.nextPageToken;
    expect(token).toMatch(/^v1:/);
    const tampered = token.slice(0, -2) + (token.endsWith("A") ? "BB" : "AA");
    expectError(await call(base, s.key, "GET", `/v1/subscriptions/${s.id}/events?nextPageToken=${encodeURIComponent(tampered)}`), 400, "invalid_pagination_token");
    expectError(await call(base, s.key, "GET", `/v1/subscriptions/${s.id}/events?status=pending&nextPageToken=${encodeURIComponent(token)}`), 400, "invalid_pagination_token");
    const other = await setup("/err-list-other");
    expectError(await call(base, other.key, "GET", `/v1/subscriptions/${other.id}/events?nextPageToken=${encodeURIComponent(token)}`), 400, "invalid_pagination_token");
    const big = await call<{ items: unknown[] }>(base, s.key, "GET", `/v1/subscriptions/${s.id}/events?limit=5000`);
    expect(big.status).toBe(200);
    expect(big.body.items.length).toBe(3);
  });
});
