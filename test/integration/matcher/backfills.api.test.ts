// The backfill endpoints without a matcher: creation resolves the range against the node (tools/tron-sim), the job
// waits queued; list, get, cancel, idempotency; every error of the contract with its `param`; disabling the
// subscription cancels its open jobs and deleting it deletes them.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { BackfillJson } from "../../../gateway/routes/backfills/shared.ts";
import type { SubscriptionJson } from "../../../gateway/render.ts";
import { startTronSim, type TronSim } from "../../../tools/tron-sim/server.ts";
import { apiClient, expectError, expectStatus, type ApiClient } from "../../support/http.ts";
import { startStack, TEST_DESTINATION, type Stack } from "../../support/stack.ts";

const WATCHED = ["TPcUx2iwjomVzmX3CHDDYmnEPJFTVeyqqS", "TXCvUayMx6AuBvS7qBa79ZAfhrwSA7vTjG"];
const OTHER = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const START = 20_000_000;
const BACKLOG = 120;

let sim: TronSim;
let stack: Stack;
let api: ApiClient;
let sub: SubscriptionJson;
let solid: { number: number; timestampMs: number };

async function newSubscription(client = api, chains = ["tron:nile"]): Promise<SubscriptionJson> {
  const res = await client.post("/v1/subscriptions", { destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.confirmed"] });
  expectStatus(res, 201);
  const s = res.json<SubscriptionJson>();
  const put = await client.put(`/v1/subscriptions/${s.id}/filters/addresses`, WATCHED.map((address) => ({ chainId: chains[0], address })));
  expectStatus(put, 200);
  return s;
}

beforeAll(async () => {
  sim = startTronSim({ blockMs: 0, recorded: false, startNumber: START, backlog: BACKLOG, txPerBlock: 5, poolSize: 50, seed: 3 });
  stack = await startStack({ nodeUrls: { "tron:nile": sim.url }, env: { BACKFILL_MAX_BLOCKS: "100" } });
  api = apiClient(stack.baseUrl, (await stack.createKey({ chains: ["tron:nile"] })).key);
  sub = await newSubscription();
  const s = sim.chain.solid().block.block_header.raw_data;
  solid = { number: s.number, timestampMs: s.timestamp };
});
afterAll(async () => {
  await stack?.stop();
  await sim?.stop();
});

const path = () => `/v1/subscriptions/${sub.id}/backfills`;

describe("create, read, cancel", () => {
  test("by block: 202 with the job queued, the range capped at the solidified head", async () => {
    const res = await api.post(path(), { chainId: "tron:nile", fromBlock: solid.number - 10, toBlock: solid.number + 50 });
    expectStatus(res, 202);
    const job = res.json<BackfillJson>();
    expect(job.id).toMatch(/^bf_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(job).toMatchObject({
      subscriptionId: sub.id,
      chainId: "tron:nile",
      status: "queued",
      fromBlock: solid.number - 10,
      toBlock: solid.number,
      addresses: 2,
      progress: { blocksScanned: 0, blocksTotal: 11, eventsCreated: 0, eventsSkipped: 0 },
      error: null,
      dateStarted: null,
      dateFinished: null,
    });
    expect(Object.keys(job)).toEqual([
      "id", "subscriptionId", "chainId", "status", "fromBlock", "toBlock", "addresses", "progress", "error", "dateCreated", "dateStarted", "dateFinished",
    ]);
    const got = await api.get(`${path()}/${job.id}`);
    expectStatus(got, 200);
    expect(got.json<BackfillJson>()).toEqual(job);
  });

  test("by time: since and until resolve to the first block at or after / the last at or before", async () => {
    const from = sim.chain.byNumber(START + 20)!.block.block_header.raw_data;
    const to = sim.chain.byNumber(START + 40)!.block.block_header.raw_data;
    const res = await api.post(path(), {
      chainId: "tron:nile",
      since: new Date(from.timestamp - 1_000).toISOString(),
      until: new Date(to.timestamp + 1_000).toISOString(),
      addresses: [WATCHED[1]],
    });
    expectStatus(res, 202);
    expect(res.json<BackfillJson>()).toMatchObject({ fromBlock: START + 20, toBlock: START + 40, addresses: 1 });
  });

  test("list newest first, paged; cancel; cancel again returns it unchanged", async () => {
    const page1 = await api.get(`${path()}?limit=1`);
    expectStatus(page1, 200);
    const p1 = page1.json<{ items: BackfillJson[]; nextPageToken?: string }>();
    expect(p1.items).toHaveLength(1);
    expect(p1.nextPageToken).toStartWith("v1:");
    const page2 = await api.get(`${path()}?limit=1&nextPageToken=${encodeURIComponent(p1.nextPageToken!)}`);
    const p2 = page2.json<{ items: BackfillJson[]; nextPageToken?: string }>();
    expect(p2.items[0]!.id < p1.items[0]!.id).toBe(true);

    const c = await api.post(`${path()}/${p1.items[0]!.id}/cancel`);
    expectStatus(c, 200);
    const canceled = c.json<BackfillJson>();
    expect(canceled.status).toBe("canceled");
    expect(canceled.dateFinished).not.toBeNull();
    const again = await api.post(`${path()}/${p1.items[0]!.id}/cancel`);
    expectStatus(again, 200);
    expect(again.json<BackfillJson>()).toEqual(canceled);
  });

  test("Idempotency-Key replays the first job", async () => {
    const headers = { "idempotency-key": "bf-1" };
    const a = await api.post(path(), { chainId: "tron:nile", fromBlock: START + 1, toBlock: START + 2 }, { headers });
    const b = await api.post(path(), { chainId: "tron:nile", fromBlock: START + 1, toBlock: START + 2 }, { headers });
    expectStatus(b, 202);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect(b.json<BackfillJson>().id).toBe(a.json<BackfillJson>().id);
  });
});

describe("errors, each with its param, and nothing created", () => {
  const cases: [string, () => unknown, number, string, Record<string, unknown> | null][] = [
    ["neither fromBlock nor since", () => ({ chainId: "tron:nile" }), 400, "invalid_request", { param: "/fromBlock" }],
    ["both fromBlock and since", () => ({ chainId: "tron:nile", fromBlock: START, since: new Date().toISOString() }), 400, "invalid_request", { param: "/fromBlock" }],
    ["both toBlock and until", () => ({ chainId: "tron:nile", fromBlock: START, toBlock: START + 1, until: new Date().toISOString() }), 400, "invalid_request", { param: "/until" }],
    ["toBlock below fromBlock", () => ({ chainId: "tron:nile", fromBlock: START + 10, toBlock: START + 9 }), 400, "invalid_request", { param: "/toBlock" }],
    ["fromBlock above the solidified head", () => ({ chainId: "tron:nile", fromBlock: solid.number + 1 }), 400, "invalid_request", { param: "/fromBlock" }],
    ["since after the solidified head", () => ({ chainId: "tron:nile", since: new Date(Date.now() + 60_000).toISOString() }), 400, "invalid_request", { param: "/since" }],
    ["a range over BACKFILL_MAX_BLOCKS", () => ({ chainId: "tron:nile", fromBlock: START, toBlock: START + 100 }), 400, "invalid_request", { param: "/fromBlock" }],
    ["fromBlock not an integer", () => ({ chainId: "tron:nile", fromBlock: 1.5 }), 400, "invalid_request", { param: "/fromBlock" }],
    ["since not a time", () => ({ chainId: "tron:nile", since: "yesterday" }), 400, "invalid_request", { param: "/since" }],
    ["addresses empty", () => ({ chainId: "tron:nile", fromBlock: START, addresses: [] }), 400, "invalid_request", { param: "/addresses" }],
    ["an address not in the subscription", () => ({ chainId: "tron:nile", fromBlock: START, addresses: [WATCHED[0], OTHER] }), 400, "invalid_request", { param: "/addresses/1" }],
    ["an address malformed", () => ({ chainId: "tron:nile", fromBlock: START, addresses: ["0x12"] }), 400, "invalid_address", { param: "/addresses/0", index: 0, input: "0x12" }],
    ["an unknown chain", () => ({ chainId: "tron:moon", fromBlock: START }), 400, "invalid_chain", { param: "/chainId" }],
    ["a chain the key lacks", () => ({ chainId: "tron:mainnet", fromBlock: START }), 400, "chain_not_enabled", { param: "/chainId" }],
  ];
  for (const [name, body, status, code, detail] of cases) {
    test(`${name} → ${status} ${code}`, async () => {
      const before = (await api.get(`${path()}?limit=200`)).json<{ items: unknown[] }>().items.length;
      expectError(await api.post(path(), body()), status, code, detail);
      expect((await api.get(`${path()}?limit=200`)).json<{ items: unknown[] }>().items.length).toBe(before);
    });
  }

  test("another key's subscription or job, an unknown or malformed id → 404", async () => {
    const job = (await api.post(path(), { chainId: "tron:nile", fromBlock: START + 50 })).json<BackfillJson>();
    expect(job.id).toStartWith("bf_");
    const other = apiClient(stack.baseUrl, (await stack.createKey({ chains: ["tron:nile"] })).key);
    expectError(await other.post(path(), { chainId: "tron:nile", fromBlock: START }), 404, "not_found");
    expectError(await other.get(path()), 404, "not_found");
    expectError(await other.get(`${path()}/${job.id}`), 404, "not_found");
    expectError(await other.post(`${path()}/${job.id}/cancel`), 404, "not_found");
    const otherSub = await newSubscription(other);
    expectError(await other.get(`/v1/subscriptions/${otherSub.id}/backfills/${job.id}`), 404, "not_found");
    expectError(await api.get(`${path()}/bf_01HZZZZZZZZZZZZZZZZZZZZZZZ`), 404, "not_found");
    expectError(await api.get(`${path()}/bf_nope`), 404, "not_found");
  });
});

describe("the subscription's lifecycle", () => {
  test("disabling cancels open jobs (error: subscription disabled), then 409 subscription_disabled; deleting deletes them", async () => {
    const s = await newSubscription();
    const p = `/v1/subscriptions/${s.id}/backfills`;
    const created = await api.post(p, { chainId: "tron:nile", fromBlock: START + 50 });
    expectStatus(created, 202);
    const job = created.json<BackfillJson>();
    const put = await api.put(`/v1/subscriptions/${s.id}`, { destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.confirmed"], status: "disabled" });
    expectStatus(put, 200);
    const after = (await api.get(`${p}/${job.id}`)).json<BackfillJson>();
    expect(after).toMatchObject({ status: "canceled", error: "subscription disabled" });
    expectError(await api.post(p, { chainId: "tron:nile", fromBlock: START }), 409, "subscription_disabled");
    expectStatus(await api.delete(`/v1/subscriptions/${s.id}`), 204);
    const rows = (await stack.registry.store.db.$client`SELECT count(*)::int AS n FROM backfills WHERE subscription_id = ${s.id}`) as { n: number }[];
    expect(rows[0]!.n).toBe(0);
  });
});
