// Every success path of the subscription endpoints, through HTTP, against the real registry on PostgreSQL.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { SubscriptionJson } from "../../../gateway/render.ts";
import { apiClient, expectError, expectStatus, urlOf, type ApiClient } from "../../support/http.ts";
import { startStack, TEST_DESTINATION, type Stack } from "../../support/stack.ts";
import { subscriptionSecretBinding } from "../../../registry/sealed-columns.ts";

let stack: Stack;
let api: ApiClient;
let keyId: string;

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SUB_ID = /^sub_[0-9A-HJKMNP-TV-Z]{26}$/;
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const DEFAULT_MATCH: SubscriptionJson["match"] = { assets: null, directions: ["incoming", "outgoing"], includeZeroValue: false };

beforeAll(async () => {
  stack = await startStack();
  const key = await stack.createKey();
  keyId = key.id;
  api = apiClient(stack.baseUrl, key.key);
});
afterAll(async () => {
  await stack?.stop();
});

async function create(body: Record<string, unknown> = {}): Promise<SubscriptionJson> {
  const res = await api.post("/v1/subscriptions", {
    destination: { type: "https", url: TEST_DESTINATION },
    events: ["wallet.transfer.broadcasted"],
    ...body,
  });
  expectStatus(res, 201);
  return res.json<SubscriptionJson>();
}

describe("POST /v1/subscriptions", () => {
  test("201 with the full representation, the secret once, empty filters, defaults applied", async () => {
    const before = Date.now();
    const res = await api.post("/v1/subscriptions", {
      destination: { type: "https", url: TEST_DESTINATION },
      events: ["wallet.transfer.broadcasted", "service.ping"],
    });
    expectStatus(res, 201);
    const sub = res.json<SubscriptionJson>();
    expect(Object.keys(sub)).toEqual(["id", "destination", "events", "filters", "match", "status", "description", "dateCreated", "dateUpdated"]);
    expect(sub).toEqual({
      id: expect.stringMatching(SUB_ID),
      destination: { type: "https", url: TEST_DESTINATION, secret: expect.stringMatching(SECRET) },
      events: ["wallet.transfer.broadcasted", "service.ping"],
      filters: { addresses: [], hasMore: false },
      match: DEFAULT_MATCH,
      status: "enabled",
      description: "",
      dateCreated: expect.stringMatching(ISO_MS),
      dateUpdated: expect.stringMatching(ISO_MS),
    });
    expect(sub.dateUpdated).toBe(sub.dateCreated);
    expect(Date.parse(sub.dateCreated)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(sub.dateCreated)).toBeLessThanOrEqual(Date.now() + 1000);
    expect(res.headers.get("idempotent-replayed")).toBeNull();
  });

  test("status and description are kept as given; duplicate events collapse in order", async () => {
    const sub = await create({
      status: "disabled",
      description: "treasury wallet ✓",
      events: ["service.ping", "wallet.transfer.broadcasted", "service.ping"],
    });
    expect(sub.status).toBe("disabled");
    expect(sub.description).toBe("treasury wallet ✓");
    expect(sub.events).toEqual(["service.ping", "wallet.transfer.broadcasted"]);
  });

  test("the transfer lifecycle kinds are accepted: confirmed and failed, alone or with broadcasted", async () => {
    const all = ["wallet.transfer.broadcasted", "wallet.transfer.confirmed", "wallet.transfer.failed", "service.ping"];
    expect((await create({ events: all })).events).toEqual(all);
    expect((await create({ events: ["wallet.transfer.confirmed"] })).events).toEqual(["wallet.transfer.confirmed"]);
    expect((await create({ events: ["wallet.transfer.failed"] })).events).toEqual(["wallet.transfer.failed"]);
  });

  test("the account activity kinds are accepted, every one together, alone, and with match conditions (which they ignore)", async () => {
    const activity = [
      "wallet.approval.broadcasted", "wallet.approval.confirmed", "wallet.permission.broadcasted", "wallet.permission.confirmed",
      "wallet.resource.broadcasted", "wallet.resource.confirmed", "wallet.blacklist.broadcasted", "wallet.blacklist.confirmed",
    ];
    const every = ["wallet.transfer.broadcasted", "wallet.transfer.confirmed", "wallet.transfer.failed", ...activity, "service.ping"];
    expect((await create({ events: every })).events).toEqual(every);
    expect((await create({ events: ["wallet.blacklist.confirmed"] })).events).toEqual(["wallet.blacklist.confirmed"]);
    // match is stored and returned as given, though only transfer kinds apply it (docs/CONTRACT.md "Match conditions").
    const match: SubscriptionJson["match"] = { assets: [{ standard: "TRX", minAmount: "0" }], directions: ["incoming"], includeZeroValue: false };
    const sub = await create({ events: ["wallet.approval.confirmed"], match });
    expect([sub.events, sub.match]).toEqual([["wallet.approval.confirmed"], match]);
  });

  test("a description of exactly 512 code points (astral characters count once) is accepted", async () => {
    const description = "😀".repeat(512);
    const sub = await create({ description });
    expect(sub.description).toBe(description);
  });

  test("unknown fields are ignored, at every level", async () => {
    const sub = await create({ extra: 1, destination: { type: "https", url: TEST_DESTINATION, headers: { a: "b" } } });
    expect(urlOf(sub)).toBe(TEST_DESTINATION);
    expect(Object.keys(sub)).not.toContain("extra");
    expect(Object.keys(sub.destination).sort()).toEqual(["secret", "type", "url"]);
  });

  test("a public IP literal and a host resolving to public addresses (v4 and v6) are accepted", async () => {
    expect(urlOf(await create({ destination: { type: "https", url: "https://93.184.216.34/hook" } }))).toBe(
      "https://93.184.216.34/hook",
    );
    expect(urlOf(await create({ destination: { type: "https", url: "https://receiver.example.org:8443/x?y=1" } }))).toBe(
      "https://receiver.example.org:8443/x?y=1",
    );
  });
});

describe("GET /v1/subscriptions/:id", () => {
  test("200 with inlined (empty) addresses and hasMore, no secret", async () => {
    const created = await create({ description: "get me" });
    const res = await api.get(`/v1/subscriptions/${created.id}`);
    expectStatus(res, 200);
    const { secret: _secret, ...destination } = created.destination;
    expect(res.json<SubscriptionJson>()).toEqual({
      ...created,
      destination,
      filters: { addresses: [], hasMore: false },
    });
    expect(res.text).not.toContain("whsec_");
  });
});

describe("GET /v1/subscriptions", () => {
  test("page envelope newest first; items have filters exactly {addresses: []} and no secret; last page has no token", async () => {
    const own = apiClient(stack.baseUrl, (await stack.createKey()).key);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await own.post("/v1/subscriptions", {
        destination: { type: "https", url: TEST_DESTINATION },
        events: ["service.ping"],
        description: `n${i}`,
      });
      expectStatus(res, 201);
      ids.push(res.json<SubscriptionJson>().id);
    }
    const res = await own.get("/v1/subscriptions");
    expectStatus(res, 200);
    const page = res.json<{ items: SubscriptionJson[]; nextPageToken?: string }>();
    expect(Object.keys(page)).toEqual(["items"]);
    expect(page.items.map((s) => s.id)).toEqual([...ids].reverse());
    for (const item of page.items) {
      expect(item.filters).toEqual({ addresses: [] });
      expect(Object.keys(item.destination).sort()).toEqual(["type", "url"]);
    }
    expect(res.text).not.toContain("whsec_");
  });

  test("an empty account lists an empty page; limit above 200 is clamped; an empty token is the first page", async () => {
    const empty = apiClient(stack.baseUrl, (await stack.createKey()).key);
    const res = await empty.get("/v1/subscriptions?limit=1000&nextPageToken=");
    expectStatus(res, 200);
    expect(res.json()).toEqual({ items: [] });
  });

  test("limit pages with a token; the token is v1:-prefixed", async () => {
    const own = apiClient(stack.baseUrl, (await stack.createKey()).key);
    for (let i = 0; i < 3; i++) {
      expectStatus(await own.post("/v1/subscriptions", { destination: { type: "https", url: TEST_DESTINATION }, events: ["service.ping"] }), 201);
    }
    const first = (await own.get("/v1/subscriptions?limit=2")).json<{ items: SubscriptionJson[]; nextPageToken?: string }>();
    expect(first.items).toHaveLength(2);
    expect(first.nextPageToken).toStartWith("v1:");
    const second = (await own.get(`/v1/subscriptions?limit=2&nextPageToken=${encodeURIComponent(first.nextPageToken!)}`)).json<{
      items: SubscriptionJson[];
      nextPageToken?: string;
    }>();
    expect(second.items).toHaveLength(1);
    expect(second.nextPageToken).toBeUndefined();
  });
});

describe("PUT /v1/subscriptions/:id", () => {
  test("replaces the mutable fields; filters {addresses: []}; dateCreated kept, dateUpdated moves; no secret", async () => {
    const created = await create({ status: "enabled", description: "before" });
    await Bun.sleep(5);
    const res = await api.put(`/v1/subscriptions/${created.id}`, {
      destination: { type: "https", url: "https://receiver.example.org/new" },
      events: ["service.ping"],
      status: "disabled",
      description: "after",
    });
    expectStatus(res, 200);
    const updated = res.json<SubscriptionJson>();
    expect(updated).toEqual({
      id: created.id,
      destination: { type: "https", url: "https://receiver.example.org/new" },
      events: ["service.ping"],
      filters: { addresses: [] },
      match: DEFAULT_MATCH,
      status: "disabled",
      description: "after",
      dateCreated: created.dateCreated,
      dateUpdated: expect.stringMatching(ISO_MS),
    });
    expect(Date.parse(updated.dateUpdated)).toBeGreaterThan(Date.parse(created.dateUpdated));
    const got = (await api.get(`/v1/subscriptions/${created.id}`)).json<SubscriptionJson>();
    expect(got).toEqual({ ...updated, filters: { addresses: [], hasMore: false } });
  });

  test("omitted status resets to enabled and omitted description to empty", async () => {
    const created = await create({ status: "disabled", description: "to be cleared" });
    const res = await api.put(`/v1/subscriptions/${created.id}`, {
      destination: { type: "https", url: TEST_DESTINATION },
      events: ["wallet.transfer.broadcasted"],
    });
    expectStatus(res, 200);
    expect(res.json<SubscriptionJson>()).toMatchObject({ status: "enabled", description: "" });
  });

  test("the signing secret is untouched by PUT (the stored secret is still the one created)", async () => {
    const created = await create();
    expectStatus(await api.put(`/v1/subscriptions/${created.id}`, { destination: { type: "https", url: TEST_DESTINATION }, events: ["service.ping"] }), 200);
    const row = await stack.registry.store.getSubscription(keyId, created.id);
    expect(row).toBeDefined();
    expect(stack.registry.store.open(row!.secret, subscriptionSecretBinding(created.id))).toBe(created.destination.secret!);
  });
});

describe("DELETE /v1/subscriptions/:id", () => {
  test("204 with no body; afterwards GET, PUT, rotate and a second DELETE are 404; it leaves the list", async () => {
    const created = await create();
    const res = await api.delete(`/v1/subscriptions/${created.id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expect(res.headers.get("content-type")).toBeNull();
    expect(res.headers.get("x-request-id")).toBeTruthy();
    expectError(await api.get(`/v1/subscriptions/${created.id}`), 404, "not_found", null);
    expectError(
      await api.put(`/v1/subscriptions/${created.id}`, { destination: { type: "https", url: TEST_DESTINATION }, events: ["service.ping"] }),
      404,
      "not_found",
    );
    expectError(await api.post(`/v1/subscriptions/${created.id}/secrets/rotate`), 404, "not_found");
    expectError(await api.delete(`/v1/subscriptions/${created.id}`), 404, "not_found");
    const list = (await api.get("/v1/subscriptions?limit=200")).json<{ items: SubscriptionJson[] }>();
    expect(list.items.map((s) => s.id)).not.toContain(created.id);
  });
});

describe("POST /v1/subscriptions/:id/secrets/rotate", () => {
  test("no body at all: 200 with the GET representation plus a new secret; dateUpdated moves", async () => {
    const created = await create();
    await Bun.sleep(5);
    const res = await api.request("POST", `/v1/subscriptions/${created.id}/secrets/rotate`);
    expectStatus(res, 200);
    const rotated = res.json<SubscriptionJson>();
    expect(rotated).toEqual({
      ...created,
      destination: { type: "https", url: TEST_DESTINATION, secret: expect.stringMatching(SECRET) },
      filters: { addresses: [], hasMore: false },
      dateUpdated: expect.stringMatching(ISO_MS),
    });
    expect(rotated.destination.secret).not.toBe(created.destination.secret);
    expect(Date.parse(rotated.dateUpdated)).toBeGreaterThan(Date.parse(created.dateUpdated));
    // Shown once: GET does not reveal it.
    expect((await api.get(`/v1/subscriptions/${created.id}`)).text).not.toContain("whsec_");
  });

  test("no body with a Content-Type, and an empty JSON object, are both accepted", async () => {
    const created = await create();
    expectStatus(await api.request("POST", `/v1/subscriptions/${created.id}/secrets/rotate`, { headers: { "content-type": "application/json" } }), 200);
    expectStatus(await api.request("POST", `/v1/subscriptions/${created.id}/secrets/rotate`, { headers: { "content-type": "text/plain" } }), 200);
    expectStatus(await api.post(`/v1/subscriptions/${created.id}/secrets/rotate`, {}), 200);
  });

  test("a given secret is installed and returned; gracePeriodSeconds 0 and the maximum are accepted", async () => {
    const created = await create();
    const secret = "whsec_" + Buffer.alloc(24, 7).toString("base64");
    const res = await api.post(`/v1/subscriptions/${created.id}/secrets/rotate`, { secret, gracePeriodSeconds: 0, ignored: true });
    expectStatus(res, 200);
    expect(res.json<SubscriptionJson>().destination.secret).toBe(secret);
    expectStatus(await api.post(`/v1/subscriptions/${created.id}/secrets/rotate`, { gracePeriodSeconds: 604800 }), 200);
  });
});

describe("match conditions", () => {
  const USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
  const given = {
    assets: [
      { standard: "TRC20", contract: USDT, minAmount: "1000000" },
      { standard: "TRX" },
      { standard: "TRC10", tokenId: "1002000", minAmount: "000250" },
    ],
    directions: ["incoming", "incoming"],
    includeZeroValue: true,
    unknownField: "ignored",
  };
  // Normalized: minAmount filled ("0") and canonical, duplicate directions collapsed, unknown fields dropped.
  const stored: SubscriptionJson["match"] = {
    assets: [
      { standard: "TRC20", contract: USDT, minAmount: "1000000" },
      { standard: "TRX", minAmount: "0" },
      { standard: "TRC10", tokenId: "1002000", minAmount: "250" },
    ],
    directions: ["incoming"],
    includeZeroValue: true,
  };

  test("given on create: returned normalized by create, GET, list items, PUT, rotate and the PATCH result", async () => {
    const sub = await create({ match: given });
    expect(sub.match).toEqual(stored);
    expect((await api.get(`/v1/subscriptions/${sub.id}`)).json<SubscriptionJson>().match).toEqual(stored);
    const listed = (await api.get("/v1/subscriptions?limit=200")).json<{ items: SubscriptionJson[] }>().items;
    expect(listed.find((s) => s.id === sub.id)!.match).toEqual(stored);
    const rotated = await api.post(`/v1/subscriptions/${sub.id}/secrets/rotate`);
    expectStatus(rotated, 200);
    expect(rotated.json<SubscriptionJson>().match).toEqual(stored);
    const patched = await api.request("PATCH", `/v1/subscriptions/${sub.id}/filters/addresses`, { body: { add: [{ chainId: "tron:mainnet", address: USDT }] } });
    expectStatus(patched, 200);
    expect(patched.json<{ subscription: SubscriptionJson }>().subscription.match).toEqual(stored);
    const put = await api.put(`/v1/subscriptions/${sub.id}`, { destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.failed"], match: given });
    expectStatus(put, 200);
    expect(put.json<SubscriptionJson>().match).toEqual(stored);
  });

  test("omitted or null on create is the default; null assets means every asset; partial conditions keep the other defaults", async () => {
    expect((await create()).match).toEqual(DEFAULT_MATCH);
    expect((await create({ match: null })).match).toEqual(DEFAULT_MATCH);
    expect((await create({ match: {} })).match).toEqual(DEFAULT_MATCH);
    expect((await create({ match: { assets: null, directions: ["outgoing", "incoming"] } })).match).toEqual({ ...DEFAULT_MATCH, directions: ["outgoing", "incoming"] });
    expect((await create({ match: { includeZeroValue: true } })).match).toEqual({ ...DEFAULT_MATCH, includeZeroValue: true });
    const hundred = Array.from({ length: 100 }, (_, i) => ({ standard: "TRC10", tokenId: String(1_000_001 + i) }));
    expect((await create({ match: { assets: hundred } })).match.assets).toHaveLength(100);
  });

  test("PUT without match resets it to the default; PUT with match replaces it", async () => {
    const sub = await create({ match: given });
    const body = { destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.broadcasted"] };
    const reset = await api.put(`/v1/subscriptions/${sub.id}`, body);
    expectStatus(reset, 200);
    expect(reset.json<SubscriptionJson>().match).toEqual(DEFAULT_MATCH);
    expect((await api.get(`/v1/subscriptions/${sub.id}`)).json<SubscriptionJson>().match).toEqual(DEFAULT_MATCH);
    const outgoing = await api.put(`/v1/subscriptions/${sub.id}`, { ...body, match: { directions: ["outgoing"] } });
    expect(outgoing.json<SubscriptionJson>().match).toEqual({ ...DEFAULT_MATCH, directions: ["outgoing"] });
    expect((await api.get(`/v1/subscriptions/${sub.id}`)).json<SubscriptionJson>().match).toEqual({ ...DEFAULT_MATCH, directions: ["outgoing"] });
  });

  test("an idempotent replay of a create returns the same conditions", async () => {
    const headers = { "idempotency-key": `match-${Date.now()}` };
    const body = { destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.confirmed"], match: given };
    const first = await api.post("/v1/subscriptions", body, { headers });
    const again = await api.post("/v1/subscriptions", body, { headers });
    expectStatus(again, 201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.json<SubscriptionJson>().match).toEqual(stored);
    expect(again.json<SubscriptionJson>().id).toBe(first.json<SubscriptionJson>().id);
  });
});
