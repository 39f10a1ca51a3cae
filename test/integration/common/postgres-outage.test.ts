// PostgreSQL taken away behind a TCP proxy (the shared server stays up): every endpoint answers 503
// service_unavailable within 5 s — never 500, 401 or a hang — nothing changes, /readyz reports it, and the API
// recovers without a restart when the database is back.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { SubscriptionJson } from "../../../gateway/render.ts";
import { apiClient, expectError, expectStatus, type ApiClient, type ApiResponse } from "../../support/http.ts";
import { startStack, TEST_DESTINATION, type Stack } from "../../support/stack.ts";
import { startTcpProxy, type TcpProxy } from "../../support/tcp-proxy.ts";

let proxy: TcpProxy;
let stack: Stack;
let api: ApiClient;
let unusedKey: string;
let sub: SubscriptionJson;

const body = (description = "") => ({ destination: { type: "https", url: TEST_DESTINATION }, events: ["service.ping"], description });

beforeAll(async () => {
  proxy = await startTcpProxy();
  stack = await startStack({ databasePort: proxy.port });
  api = apiClient(stack.baseUrl, (await stack.createKey()).key);
  // Issued but never used: the gateway has not cached it, so it needs the database to be resolved.
  unusedKey = (await stack.createKey()).key;
  const res = await api.post("/v1/subscriptions", body("before the outage"));
  expectStatus(res, 201);
  sub = res.json<SubscriptionJson>();
});
afterAll(async () => {
  await stack?.stop();
  await proxy?.close();
});

async function timed(call: () => Promise<ApiResponse>): Promise<{ res: ApiResponse; ms: number }> {
  const started = performance.now();
  const res = await call();
  return { res, ms: performance.now() - started };
}

async function countRows(): Promise<number> {
  const rows = await stack.registry.store.db.$client`SELECT count(*)::int AS n FROM subscriptions`;
  return (rows[0] as { n: number }).n;
}

async function waitForRecovery(): Promise<ApiResponse> {
  let last: ApiResponse | undefined;
  for (let i = 0; i < 100; i++) {
    last = await api.get(`/v1/subscriptions/${sub.id}`);
    // GET reads through the registry's small read pool; the registry's /readyz pings both pools, so the main pool
    // (which the row counts below use directly, unguarded) has left its connection attempts from the outage behind too.
    if (last.status === 200 && (await apiClient(stack.config.registryUrl).get("/readyz")).status === 200) return last;
    await Bun.sleep(100);
  }
  return last!;
}

// One Idempotency-Key per outage scenario.
let outage = 0;
const requests: [string, () => Promise<ApiResponse>][] = [
  ["create", () => api.post("/v1/subscriptions", body("during the outage"), { headers: { "idempotency-key": `outage-${outage}` } })],
  // Without a key, create is a single prepared INSERT outside any transaction: a separate path to the database.
  ["create without Idempotency-Key", () => api.post("/v1/subscriptions", body("during the outage, no key"))],
  ["list", () => api.get("/v1/subscriptions")],
  ["get", () => api.get(`/v1/subscriptions/${sub.id}`)],
  ["put", () => api.put(`/v1/subscriptions/${sub.id}`, { ...body("changed"), status: "disabled" })],
  ["rotate", () => api.post(`/v1/subscriptions/${sub.id}/secrets/rotate`)],
  ["delete", () => api.delete(`/v1/subscriptions/${sub.id}`)],
  ["an uncached API key", () => apiClient(stack.baseUrl, unusedKey).get("/v1/subscriptions")],
];

describe.each([
  ["refused (nothing listening)", () => proxy.refuse()],
  ["frozen (connections stay up, no bytes move)", async () => proxy.freeze()],
  ["black-holed (connections accepted, never answered)", async () => proxy.blackhole()],
])("PostgreSQL %s", (_name, cut) => {
  test("every endpoint answers 503 service_unavailable within 5 s and changes nothing; then it recovers", async () => {
    expectStatus(await waitForRecovery(), 200);
    const rowsBefore = await countRows();
    outage++;
    await cut();
    try {
      const results = await Promise.all(requests.map(async ([name, call]) => [name, await timed(call)] as const));
      for (const [name, { res, ms }] of results) {
        expect(`${name}: ${res.status}`).toBe(`${name}: 503`);
        expectError(res, 503, "service_unavailable", null);
        expect(ms).toBeLessThan(5_000);
      }
      const ready = await apiClient(stack.baseUrl).get("/readyz");
      expect(ready.status).toBe(503);
      expect(ready.json<{ checks: Record<string, boolean> }>().checks.registry).toBe(false);
    } finally {
      await proxy.restore();
    }

    const back = await waitForRecovery();
    expectStatus(back, 200);
    const { secret: _s, ...destination } = sub.destination;
    expect(back.json<SubscriptionJson>()).toEqual({ ...sub, destination, filters: { addresses: [], hasMore: false } });
    expect(await countRows()).toBe(rowsBefore);
    expectStatus(await apiClient(stack.baseUrl, unusedKey).get("/v1/subscriptions"), 200);
    expectStatus(await apiClient(stack.baseUrl).get("/readyz"), 200);
    // The create refused during the outage kept no idempotency record: the key works now.
    const created = await api.post("/v1/subscriptions", body("during the outage"), { headers: { "idempotency-key": `outage-${outage}` } });
    expectStatus(created, 201);
    expect(created.headers.get("idempotent-replayed")).toBeNull();
    expectStatus(await api.delete(`/v1/subscriptions/${created.json<SubscriptionJson>().id}`), 204);
  }, 60_000);
});
