// Authentication (checked before anything else), per-key scoping (BOLA), the SSRF check through the API, and
// secrets never shown outside create and rotate.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createClient } from "@connectrpc/connect";
import { inProcessTransport } from "../../../common/rpc.ts";
import { staticResolver } from "../../../common/ssrf.ts";
import type { SubscriptionJson } from "../../../gateway/render.ts";
import { ApiKeyService } from "../../../gen/webhooks/registry/v1/registry_pb.ts";
import { apiClient, expectError, expectStatus, urlOf, type ApiClient } from "../../support/http.ts";
import { startStack, TEST_DESTINATION, TEST_HOSTS, type Stack } from "../../support/stack.ts";
import { subscriptionSecretBinding } from "../../../registry/sealed-columns.ts";

let stack: Stack;
let alice: ApiClient;
let aliceKey: string;
let mallory: ApiClient;

const body = (url = TEST_DESTINATION) => ({ destination: { type: "https", url }, events: ["wallet.transfer.broadcasted"] });

beforeAll(async () => {
  stack = await startStack({
    resolver: staticResolver({
      ...TEST_HOSTS,
      "internal.example.com": ["10.1.2.3"],
      "mixed.example.com": ["93.184.216.34", "192.168.10.20"],
      "metadata.example.com": ["169.254.169.254"],
      "v6private.example.com": ["fd00::1"],
    }),
  });
  aliceKey = (await stack.createKey({ name: "alice" })).key;
  alice = apiClient(stack.baseUrl, aliceKey);
  mallory = apiClient(stack.baseUrl, (await stack.createKey({ name: "mallory" })).key);
});
afterAll(async () => {
  await stack?.stop();
});

describe("authentication comes first", () => {
  const anonymous = () => apiClient(stack.baseUrl);

  test.each([
    ["no header", {}],
    ["another scheme", { authorization: `Basic ${Buffer.from("a:b").toString("base64")}` }],
    ["Bearer without a token", { authorization: "Bearer" }],
    ["Bearer with an unknown key", { authorization: "Bearer whk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }],
    ["Bearer with junk", { authorization: "Bearer not-a-key" }],
    ["two tokens", { authorization: "Bearer a b" }],
  ])("%s → 401 unauthorized with WWW-Authenticate: Bearer", async (_name, headers) => {
    const res = await anonymous().get("/v1/subscriptions", { headers });
    expectError(res, 401, "unauthorized", null);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
  });

  test("the scheme is case-insensitive", async () => {
    for (const scheme of ["bearer", "BEARER", "BeArEr"]) {
      expectStatus(await anonymous().get("/v1/subscriptions", { headers: { authorization: `${scheme} ${aliceKey}` } }), 200);
    }
  });

  test("401 before anything else: unknown /v1 paths, wrong methods, bad bodies, oversized bodies, bad ids", async () => {
    const anon = anonymous();
    const checks = [
      await anon.get("/v1/nothing-here"),
      await anon.get("/v1"),
      await anon.request("PATCH", "/v1/subscriptions"),
      await anon.post("/v1/subscriptions", "{not json"),
      await anon.post("/v1/subscriptions", "x".repeat(2 * 1024 * 1024)),
      await anon.request("POST", "/v1/subscriptions", { body: "text", headers: { "content-type": "text/plain" } }),
      await anon.get("/v1/subscriptions/not-an-id"),
      await anon.get("/v1/subscriptions?limit=-5"),
    ];
    for (const res of checks) {
      expectError(res, 401, "unauthorized", null);
      expect(res.headers.get("www-authenticate")).toBe("Bearer");
    }
  });

  test("outside /v1 no authentication is needed: an unknown path is a plain 404", async () => {
    expectError(await anonymous().get("/nothing"), 404, "not_found", null);
    expectStatus(await anonymous().get("/healthz"), 200);
  });

  test("a revoked key stops working within a few seconds (the gateway's key cache is short)", async () => {
    const issued = await stack.createKey({ name: "soon revoked" });
    const client = apiClient(stack.baseUrl, issued.key);
    expectStatus(await client.get("/v1/subscriptions"), 200);
    await createClient(ApiKeyService, inProcessTransport(stack.registry.routes)).revokeApiKey({ id: issued.id });
    const deadline = Date.now() + 8_000;
    let status = 200;
    while (Date.now() < deadline) {
      status = (await client.get("/v1/subscriptions")).status;
      if (status === 401) break;
      await Bun.sleep(200);
    }
    expect(status).toBe(401);
  });
});

describe("BOLA: another key's subscription does not exist for it", () => {
  let sub: SubscriptionJson;
  beforeAll(async () => {
    const res = await alice.post("/v1/subscriptions", { ...body(), description: "alice's" });
    expectStatus(res, 201);
    sub = res.json<SubscriptionJson>();
  });

  test("GET, PUT, DELETE and rotate by another key are 404 not_found, and change nothing", async () => {
    expectError(await mallory.get(`/v1/subscriptions/${sub.id}`), 404, "not_found", null);
    expectError(await mallory.put(`/v1/subscriptions/${sub.id}`, { ...body(), status: "disabled", description: "pwned" }), 404, "not_found", null);
    expectError(await mallory.delete(`/v1/subscriptions/${sub.id}`), 404, "not_found", null);
    expectError(await mallory.post(`/v1/subscriptions/${sub.id}/secrets/rotate`), 404, "not_found", null);
    expectError(await mallory.post(`/v1/subscriptions/${sub.id}/secrets/rotate`, { secret: "whsec_" + Buffer.alloc(32, 1).toString("base64") }), 404, "not_found", null);
    const still = await alice.get(`/v1/subscriptions/${sub.id}`);
    expectStatus(still, 200);
    const { secret: _s, ...destination } = sub.destination;
    expect(still.json<SubscriptionJson>()).toEqual({ ...sub, destination, filters: { addresses: [], hasMore: false } });
    const row = await stack.registry.store.db.$client`SELECT secret, previous_secret FROM subscriptions WHERE id = ${sub.id}`;
    expect(stack.registry.store.open((row[0] as { secret: string }).secret, subscriptionSecretBinding(sub.id))).toBe(sub.destination.secret!);
  });

  test("another key's list does not show it", async () => {
    const res = await mallory.get("/v1/subscriptions?limit=200");
    expectStatus(res, 200);
    expect(res.json<{ items: SubscriptionJson[] }>().items.map((s) => s.id)).not.toContain(sub.id);
  });

  test("another key's page token is invalid_pagination_token", async () => {
    for (let i = 0; i < 2; i++) expectStatus(await alice.post("/v1/subscriptions", body()), 201);
    const page = (await alice.get("/v1/subscriptions?limit=1")).json<{ nextPageToken?: string }>();
    expect(page.nextPageToken).toStartWith("v1:");
    const token = encodeURIComponent(page.nextPageToken!);
    expectError(await mallory.get(`/v1/subscriptions?limit=1&nextPageToken=${token}`), 400, "invalid_pagination_token", null);
    expectStatus(await alice.get(`/v1/subscriptions?limit=1&nextPageToken=${token}`), 200);
  });
});

describe("SSRF: destinations in private or reserved ranges are refused at request time", () => {
  const blocked: [string, string, string][] = [
    ["https://127.0.0.1/", "127.0.0.1", "127.0.0.0/8"],
    ["https://2130706433/", "127.0.0.1", "127.0.0.0/8"],
    ["https://0x7f.0.0.1/", "127.0.0.1", "127.0.0.0/8"],
    ["https://127.1/", "127.0.0.1", "127.0.0.0/8"],
    ["https://localhost/", "127.0.0.1", "127.0.0.0/8"],
    ["https://[::1]/", "::1", "::1/128"],
    ["https://[::ffff:10.0.0.1]/", "10.0.0.1", "10.0.0.0/8"],
    ["https://[64:ff9b::a9fe:a9fe]/", "169.254.169.254", "169.254.0.0/16"],
    ["https://internal.example.com/hook", "10.1.2.3", "10.0.0.0/8"],
    ["https://mixed.example.com/hook", "192.168.10.20", "192.168.0.0/16"],
    ["https://metadata.example.com/", "169.254.169.254", "169.254.0.0/16"],
    ["https://v6private.example.com/", "fd00::1", "fc00::/7"],
    ["https://100.64.0.1/", "100.64.0.1", "100.64.0.0/10"],
    ["https://224.0.0.1/", "224.0.0.1", "224.0.0.0/4"],
    ["https://198.51.100.7/", "198.51.100.7", "198.51.100.0/24"],
  ];
  for (const [url, ip, cidr] of blocked) {
    test(`${url} → 400 ssrf_blocked {ip: ${ip}, cidr: ${cidr}} on create and on PUT; nothing stored`, async () => {
      const before = (await alice.get("/v1/subscriptions?limit=200")).json<{ items: unknown[] }>().items.length;
      expectError(await alice.post("/v1/subscriptions", body(url)), 400, "ssrf_blocked", { ip, cidr });
      expect((await alice.get("/v1/subscriptions?limit=200")).json<{ items: unknown[] }>().items.length).toBe(before);
    });
  }

  test("PUT checks the new URL too and keeps the old one", async () => {
    const created = (await alice.post("/v1/subscriptions", body())).json<SubscriptionJson>();
    expectError(await alice.put(`/v1/subscriptions/${created.id}`, body("https://internal.example.com/")), 400, "ssrf_blocked", {
      ip: "10.1.2.3",
      cidr: "10.0.0.0/8",
    });
    expect(urlOf((await alice.get(`/v1/subscriptions/${created.id}`)).json<SubscriptionJson>())).toBe(TEST_DESTINATION);
  });
});

describe("SSRF_ALLOW_CIDRS exempts exactly its ranges", () => {
  let allowStack: Stack;
  let client: ApiClient;
  beforeAll(async () => {
    allowStack = await startStack({
      env: { SSRF_ALLOW_CIDRS: "10.1.0.0/16" },
      resolver: staticResolver({ "inside.example.com": ["10.1.2.3"], "outside.example.com": ["10.2.0.1"] }),
    });
    client = apiClient(allowStack.baseUrl, (await allowStack.createKey()).key);
  });
  afterAll(async () => {
    await allowStack?.stop();
  });

  test("inside the allowed range is accepted; the rest of 10/8 is still blocked", async () => {
    expectStatus(await client.post("/v1/subscriptions", body("https://inside.example.com/hook")), 201);
    expectStatus(await client.post("/v1/subscriptions", body("https://10.1.255.255/hook")), 201);
    expectError(await client.post("/v1/subscriptions", body("https://outside.example.com/hook")), 400, "ssrf_blocked", {
      ip: "10.2.0.1",
      cidr: "10.0.0.0/8",
    });
    expectError(await client.post("/v1/subscriptions", body("https://127.0.0.1/")), 400, "ssrf_blocked", { ip: "127.0.0.1", cidr: "127.0.0.0/8" });
  });
});

describe("secrets are shown on create and rotate only", () => {
  test("never in GET, list or PUT responses", async () => {
    const created = (await alice.post("/v1/subscriptions", body())).json<SubscriptionJson>();
    const secret = created.destination.secret!;
    expect(secret).toStartWith("whsec_");
    const rotated = (await alice.post(`/v1/subscriptions/${created.id}/secrets/rotate`)).json<SubscriptionJson>();
    const responses = [
      await alice.get(`/v1/subscriptions/${created.id}`),
      await alice.get("/v1/subscriptions?limit=200"),
      await alice.put(`/v1/subscriptions/${created.id}`, body()),
    ];
    for (const res of responses) {
      expect(res.status).toBe(200);
      expect(res.text).not.toContain("whsec_");
      expect(res.text).not.toContain(secret.slice(6));
      expect(res.text).not.toContain(rotated.destination.secret!.slice(6));
    }
  });
});
