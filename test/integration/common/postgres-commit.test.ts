// A 503 means nothing changed, even when PostgreSQL freezes in the middle of writes: ~100 creates are under way
// when the connection to PostgreSQL stops moving bytes for longer than the registry's deadline, then resumes.
// Every create answered 503 must have left no row, and every 201 must have its row; a write whose COMMIT was in
// flight is answered with its real outcome, however late.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { hexToBase58 } from "../../../common/tron-address.ts";
import type { SubscriptionJson } from "../../../gateway/render.ts";
import { apiClient, type ApiClient, type ApiResponse } from "../../support/http.ts";
import { startStack, TEST_DESTINATION, type Stack } from "../../support/stack.ts";
import { startTcpProxy, type TcpProxy } from "../../support/tcp-proxy.ts";

let proxy: TcpProxy;
let stack: Stack;
let api: ApiClient;

beforeAll(async () => {
  proxy = await startTcpProxy();
  // The key stays cached in the gateway through the freeze, so every create reaches the registry's write path.
  stack = await startStack({ databasePort: proxy.port, authCacheMs: 60_000 });
  api = apiClient(stack.baseUrl, (await stack.createKey()).key);
  const warm = await api.post("/v1/subscriptions", { destination: { type: "https", url: TEST_DESTINATION }, events: ["service.ping"] });
  expect(warm.status).toBe(201);
});
afterAll(async () => {
  await stack?.stop();
  await proxy?.close();
});

async function rowsByDescription(prefix: string): Promise<Map<string, string>> {
  const rows = await stack.registry.store.db.$client`SELECT id, description FROM subscriptions WHERE description LIKE ${prefix + "%"}`;
  return new Map((rows as { id: string; description: string }[]).map((r) => [r.description, r.id]));
}

test("PostgreSQL frozen under ~100 creates: every 503 left no row, every 201 has its row", async () => {
  const run = `freeze-${Date.now()}-`;
  const N = 100;
  const answers: Promise<ApiResponse>[] = [];
  let frozen = false;
  const started = performance.now();
  for (let i = 0; i < N; i++) {
    // Half with an Idempotency-Key (record and row in one transaction), half without (the row alone).
    const headers: Record<string, string> = i % 2 === 0 ? { "idempotency-key": `${run}${i}` } : {};
    answers.push(
      api.post("/v1/subscriptions", { destination: { type: "https", url: TEST_DESTINATION }, events: ["service.ping"], description: `${run}${i}` }, { headers }),
    );
    // Spread over ~400 ms; the freeze lands in the middle, with writes at every stage.
    await Bun.sleep(4);
    if (!frozen && i === N / 2) {
      frozen = true;
      proxy.freeze();
    }
  }
  // Frozen well past the 4 s deadline, then back.
  await Bun.sleep(6_000);
  await proxy.restore();
  const results = await Promise.all(answers);
  const elapsed = performance.now() - started;

  // Let every abandoned transaction finish (roll back) now that PostgreSQL answers again.
  await Bun.sleep(1_000);
  const rows = await rowsByDescription(run);
  const statuses = results.map((r) => r.status);
  const lies: string[] = [];
  for (const [i, res] of results.entries()) {
    const description = `${run}${i}`;
    if (res.status === 201) {
      const id = res.json<SubscriptionJson>().id;
      if (rows.get(description) !== id) lies.push(`#${i} answered 201 ${id} but its row is ${rows.get(description) ?? "missing"}`);
    } else if (res.status === 503) {
      if (rows.has(description)) lies.push(`#${i} answered 503 but its row ${rows.get(description)} was committed: ${res.text.slice(0, 120)}`);
    } else {
      lies.push(`#${i} answered ${res.status}: ${res.text.slice(0, 200)}`);
    }
  }
  expect(lies).toEqual([]);
  // The freeze did cut writes off (else this test proves nothing), and writes before it went through.
  expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0);
  expect(statuses.filter((s) => s === 201).length).toBeGreaterThan(0);
  expect(elapsed).toBeLessThan(40_000);
}, 90_000);

test("PostgreSQL frozen under ~40 address PATCHes: every 503 left the list unchanged, every 200 has its address", async () => {
  const N = 40;
  const subs: string[] = [];
  for (let i = 0; i < N; i++) {
    const res = await api.post("/v1/subscriptions", { destination: { type: "https", url: TEST_DESTINATION }, events: ["service.ping"] });
    expect(res.status).toBe(201);
    subs.push(res.json<SubscriptionJson>().id);
  }
  const addresses = subs.map(() => hexToBase58(`41${randomBytes(20).toString("hex")}`));
  const answers: Promise<ApiResponse>[] = [];
  const answeredAt: number[] = [];
  const sentAt: number[] = [];
  let frozenAt = Number.POSITIVE_INFINITY;
  for (let i = 0; i < N; i++) {
    sentAt[i] = performance.now();
    answers.push(api.request("PATCH", `/v1/subscriptions/${subs[i]}/filters/addresses`, { body: { add: [{ chainId: "tron:mainnet", address: addresses[i] }] } }).then((r) => {
      answeredAt[i] = performance.now();
      return r;
    }));
    // The first half lands before the freeze. The second half is sent back to back and the freeze comes right after
    // its first ten, so those are still in flight whatever this machine's speed (a single-address PATCH can be
    // answered within a few milliseconds).
    if (i < N / 2) await Bun.sleep(4);
    if (i === N / 2 - 1) await Promise.all(answers);
    if (i === (3 * N) / 4) {
      proxy.freeze();
      frozenAt = performance.now();
    }
  }
  // Frozen past the address change's 9 s deadline, then back.
  await Bun.sleep(11_000);
  await proxy.restore();
  const results = await Promise.all(answers);
  await Bun.sleep(1_000);
  const rows = (await stack.registry.store.db.$client`
    SELECT s.id, a.address FROM subscriptions s JOIN subscription_addresses a ON a.subscription_id = s.id
    WHERE s.id IN ${stack.registry.store.db.$client(subs)}`) as { id: string; address: string }[];
  const stored = new Map(rows.map((r) => [r.id, r.address]));
  const lies: string[] = [];
  for (const [i, res] of results.entries()) {
    if (res.status === 200) {
      if (stored.get(subs[i]!) !== addresses[i]) lies.push(`#${i} answered 200 but its address is ${stored.get(subs[i]!) ?? "missing"}`);
    } else if (res.status === 503) {
      if (stored.has(subs[i]!)) lies.push(`#${i} answered 503 but its address was committed`);
    } else {
      lies.push(`#${i} answered ${res.status}: ${res.text.slice(0, 200)}`);
    }
  }
  expect(lies).toEqual([]);
  // The freeze did catch writes in flight (else this test proves nothing: some sent before PostgreSQL froze were
  // answered only after, by a deadline's 503 or by a 200 once it was back), and writes before it went through.
  expect(answeredAt.filter((t, i) => sentAt[i]! < frozenAt && t > frozenAt).length).toBeGreaterThan(0);
  expect(results.filter((r) => r.status === 200).length).toBeGreaterThan(0);
}, 90_000);
