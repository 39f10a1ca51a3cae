// Address filters through the public HTTP API, the paths that succeed: PATCH, PUT and GET of
// /v1/subscriptions/:id/filters/addresses, the inlined list on GET /v1/subscriptions/:id, and the watch index being
// up to date by the time each response arrives. Real PostgreSQL and Redis (test/support/stack.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import fixtures from "../../../fixtures/tron/addresses.json";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { lookup } from "../../../common/watch-index/reader.ts";
import { startStack, TEST_DESTINATION, type Stack, type TestKey } from "../../support/stack.ts";

const VALID = fixtures.valid as string[];
const MAINNET = "tron:mainnet";
const NILE = "tron:nile";

let stack: Stack;
let key: TestKey;

beforeAll(async () => {
  stack = await startStack();
  key = await stack.createKey();
}, 60_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

interface Entry {
  chainId: string;
  address: string;
}

async function api(method: string, path: string, body?: unknown, k: TestKey = key) {
  const res = await fetch(stack.baseUrl + path, {
    method,
    headers: { authorization: `Bearer ${k.key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: res.status, body: (text ? JSON.parse(text) : null) as any };
}

async function newSubscription(k: TestKey = key): Promise<string> {
  const res = await api("POST", "/v1/subscriptions", { destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.broadcasted"] }, k);
  expect(res.status).toBe(201);
  return res.body.id;
}

const mainnet = (address: string): Entry => ({ chainId: MAINNET, address });
const generated = (n: number) => Array.from({ length: n }, () => hexToBase58("41" + randomBytes(20).toString("hex")));
const addressesPath = (id: string) => `/v1/subscriptions/${id}/filters/addresses`;

async function listAll(id: string, limit = 200): Promise<Entry[]> {
  const out: Entry[] = [];
  let token: string | null = "";
  while (token !== null) {
    const res = await api("GET", `${addressesPath(id)}?limit=${limit}&nextPageToken=${encodeURIComponent(token)}`);
    expect(res.status).toBe(200);
    out.push(...res.body.items);
    token = res.body.nextPageToken;
  }
  return out;
}

async function watchedBy(chainId: string, addresses: string[]): Promise<Map<string, string[]>> {
  const found = await lookup(stack.registry.watchIndex.index(chainId), addresses, { includeInactive: true });
  return new Map([...found].map(([a, ws]) => [a, ws.map((w) => w.subscriptionId)]));
}

describe("PATCH", () => {
  test("adds in request order, inlines the list oldest first, moves dateUpdated, and updates the index first", async () => {
    const id = await newSubscription();
    const before = (await api("GET", `/v1/subscriptions/${id}`)).body;
    await Bun.sleep(5);
    const add = [mainnet(VALID[0]!), { chainId: NILE, address: VALID[1]! }, mainnet(VALID[2]!)];
    const res = await api("PATCH", addressesPath(id), { add });
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual({ added: add, removed: [], skipped: [] });
    expect(res.body.subscription.id).toBe(id);
    expect(res.body.subscription.filters).toEqual({ addresses: add, hasMore: false });
    expect(res.body.subscription.destination.secret).toBeUndefined();
    expect(Date.parse(res.body.subscription.dateUpdated)).toBeGreaterThan(Date.parse(before.dateUpdated));
    expect(res.body.subscription.dateCreated).toBe(before.dateCreated);

    // The index answered before the response was sent: look it up right away.
    expect(await watchedBy(MAINNET, [VALID[0]!, VALID[1]!, VALID[2]!])).toEqual(
      new Map([
        [VALID[0]!, [id]],
        [VALID[2]!, [id]],
      ]),
    );
    expect(await watchedBy(NILE, [VALID[1]!])).toEqual(new Map([[VALID[1]!, [id]]]));

    const got = await api("GET", `/v1/subscriptions/${id}`);
    expect(got.body.filters).toEqual({ addresses: add, hasMore: false });
    expect(await listAll(id)).toEqual(add);
  });

  test("an entry already present is not listed again and leaves dateUpdated alone; duplicates count once", async () => {
    const id = await newSubscription();
    await api("PATCH", addressesPath(id), { add: [mainnet(VALID[3]!)] });
    const before = (await api("GET", `/v1/subscriptions/${id}`)).body;
    await Bun.sleep(5);
    const again = await api("PATCH", addressesPath(id), { add: [mainnet(VALID[3]!), mainnet(VALID[3]!)] });
    expect(again.status).toBe(200);
    expect(again.body.results).toEqual({ added: [], removed: [], skipped: [] });
    expect(again.body.subscription.dateUpdated).toBe(before.dateUpdated);

    const dup = await api("PATCH", addressesPath(id), { add: [mainnet(VALID[4]!), mainnet(VALID[4]!)] });
    expect(dup.body.results.added).toEqual([mainnet(VALID[4]!)]);
    expect(await listAll(id)).toEqual([mainnet(VALID[3]!), mainnet(VALID[4]!)]);
  });

  test("the same address on two chains is two entries; removing one leaves the other watched", async () => {
    const id = await newSubscription();
    const a = VALID[5]!;
    await api("PATCH", addressesPath(id), { add: [mainnet(a), { chainId: NILE, address: a }] });
    const res = await api("PATCH", addressesPath(id), { remove: [mainnet(a)] });
    expect(res.body.results).toEqual({ added: [], removed: [mainnet(a)], skipped: [] });
    expect(await listAll(id)).toEqual([{ chainId: NILE, address: a }]);
    expect((await watchedBy(MAINNET, [a])).get(a) ?? []).not.toContain(id);
    expect((await watchedBy(NILE, [a])).get(a)).toContain(id);
  });

  test("removals apply before additions: remove and re-add moves the entry to the end", async () => {
    const id = await newSubscription();
    const [a, b] = [VALID[6]!, VALID[7]!];
    await api("PATCH", addressesPath(id), { add: [mainnet(a), mainnet(b)] });
    const res = await api("PATCH", addressesPath(id), { remove: [mainnet(a)], add: [mainnet(a)] });
    expect(res.body.results).toEqual({ added: [mainnet(a)], removed: [mainnet(a)], skipped: [] });
    expect(await listAll(id)).toEqual([mainnet(b), mainnet(a)]);
    expect((await watchedBy(MAINNET, [a])).get(a)).toEqual([id]);
  });

  test("removing an absent entry is skipped not_found while the rest applies", async () => {
    const id = await newSubscription();
    const res = await api("PATCH", addressesPath(id), { add: [mainnet(VALID[8]!)], remove: [mainnet(VALID[9]!)] });
    expect(res.status).toBe(200);
    expect(res.body.results.added).toEqual([mainnet(VALID[8]!)]);
    expect(res.body.results.skipped).toEqual([
      { input: mainnet(VALID[9]!), reason: "not_found", detail: expect.any(String) },
    ]);
  });

  test("more than 200 addresses: GET and PATCH inline the 200 oldest with hasMore", async () => {
    const id = await newSubscription();
    const list = generated(230);
    const res = await api("PATCH", addressesPath(id), { add: list.map(mainnet) });
    expect(res.body.results.added).toHaveLength(230);
    expect(res.body.subscription.filters.addresses).toEqual(list.slice(0, 200).map(mainnet));
    expect(res.body.subscription.filters.hasMore).toBe(true);
    const got = await api("GET", `/v1/subscriptions/${id}`);
    expect(got.body.filters.addresses).toEqual(list.slice(0, 200).map(mainnet));
    expect(got.body.filters.hasMore).toBe(true);
    // The subscription list never inlines.
    const page = await api("GET", "/v1/subscriptions?limit=200");
    expect(page.body.items.find((s: { id: string }) => s.id === id).filters).toEqual({ addresses: [] });
  });
});

describe("PUT", () => {
  test("replaces the whole list in the body's order, collapsing duplicates, and the index follows", async () => {
    const id = await newSubscription();
    await api("PATCH", addressesPath(id), { add: [mainnet(VALID[10]!), mainnet(VALID[11]!)] });
    await Bun.sleep(5);
    const body = [mainnet(VALID[12]!), mainnet(VALID[11]!), { chainId: NILE, address: VALID[12]! }, mainnet(VALID[12]!)];
    const res = await api("PUT", addressesPath(id), body);
    expect(res.status).toBe(200);
    const expected = [mainnet(VALID[12]!), mainnet(VALID[11]!), { chainId: NILE, address: VALID[12]! }];
    expect(res.body.filters).toEqual({ addresses: expected, hasMore: false });
    expect(res.body.results).toBeUndefined();
    expect(await listAll(id)).toEqual(expected);
    const idx = await watchedBy(MAINNET, [VALID[10]!, VALID[11]!, VALID[12]!]);
    expect(idx.get(VALID[10]!) ?? []).not.toContain(id);
    expect(idx.get(VALID[11]!)).toContain(id);
    expect(idx.get(VALID[12]!)).toContain(id);
  });

  test("the same list again changes nothing (dateUpdated stays); an empty array clears", async () => {
    const id = await newSubscription();
    const body = [mainnet(VALID[13]!), mainnet(VALID[14]!)];
    const first = await api("PUT", addressesPath(id), body);
    await Bun.sleep(5);
    const again = await api("PUT", addressesPath(id), body);
    expect(again.body.dateUpdated).toBe(first.body.dateUpdated);
    const cleared = await api("PUT", addressesPath(id), []);
    expect(cleared.status).toBe(200);
    expect(cleared.body.filters).toEqual({ addresses: [], hasMore: false });
    expect(Date.parse(cleared.body.dateUpdated)).toBeGreaterThan(Date.parse(first.body.dateUpdated));
    expect(await listAll(id)).toEqual([]);
    expect((await watchedBy(MAINNET, [VALID[13]!])).get(VALID[13]!) ?? []).not.toContain(id);
  });
});

describe("GET list", () => {
  test("pages in order of addition; empty token is the first page; nextPageToken is null at the end", async () => {
    const id = await newSubscription();
    const list = VALID.slice(0, 7).map(mainnet);
    await api("PATCH", addressesPath(id), { add: list.slice(0, 4) });
    await api("PATCH", addressesPath(id), { add: list.slice(4) });
    const first = await api("GET", `${addressesPath(id)}?limit=3&nextPageToken=`);
    expect(first.body.items).toEqual(list.slice(0, 3));
    expect(first.body.nextPageToken).toStartWith("v1:");
    const second = await api("GET", `${addressesPath(id)}?limit=3&nextPageToken=${encodeURIComponent(first.body.nextPageToken)}`);
    expect(second.body.items).toEqual(list.slice(3, 6));
    const third = await api("GET", `${addressesPath(id)}?limit=3&nextPageToken=${encodeURIComponent(second.body.nextPageToken)}`);
    expect(third.body).toEqual({ items: list.slice(6), nextPageToken: null });
    // Default limit 50 covers it all on one page.
    expect((await api("GET", addressesPath(id))).body).toEqual({ items: list, nextPageToken: null });
    // An empty list is one empty page.
    const empty = await newSubscription();
    expect((await api("GET", addressesPath(empty))).body).toEqual({ items: [], nextPageToken: null });
  });

  test("pages stay consistent while addresses are added: nothing skipped, nothing twice", async () => {
    const id = await newSubscription();
    const list = generated(30);
    await api("PATCH", addressesPath(id), { add: list.slice(0, 20).map(mainnet) });
    const seen: string[] = [];
    let token = "";
    let extra = 20;
    for (;;) {
      const res = await api("GET", `${addressesPath(id)}?limit=4&nextPageToken=${encodeURIComponent(token)}`);
      seen.push(...res.body.items.map((e: Entry) => e.address));
      if (extra < 30) await api("PATCH", addressesPath(id), { add: [mainnet(list[extra++]!)] });
      if (res.body.nextPageToken === null) break;
      token = res.body.nextPageToken;
    }
    expect(seen).toEqual(list.slice(0, seen.length));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBeGreaterThanOrEqual(20);
  });

  test("limit above 200 is clamped to 200", async () => {
    const id = await newSubscription();
    await api("PATCH", addressesPath(id), { add: generated(205).map(mainnet) });
    const res = await api("GET", `${addressesPath(id)}?limit=1000`);
    expect(res.status).toBe(200);
    expect(res.body.items).toHaveLength(200);
    expect(res.body.nextPageToken).toStartWith("v1:");
  });
});

describe("watch index follows the subscription", () => {
  test("disabled, re-enabled and deleted subscriptions stop and resume matching at once", async () => {
    const id = await newSubscription();
    const a = VALID[15]!;
    await api("PATCH", addressesPath(id), { add: [mainnet(a)] });
    const active = async () => (await lookup(stack.registry.watchIndex.index(MAINNET), [a])).get(a)?.map((w) => w.subscriptionId) ?? [];
    expect(await active()).toContain(id);
    const put = (status: string) =>
      api("PUT", `/v1/subscriptions/${id}`, { destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.broadcasted"], status });
    expect((await put("disabled")).status).toBe(200);
    expect(await active()).not.toContain(id);
    expect((await put("enabled")).status).toBe(200);
    expect(await active()).toContain(id);
    expect((await api("DELETE", `/v1/subscriptions/${id}`)).status).toBe(204);
    expect(await active()).not.toContain(id);
    expect((await watchedBy(MAINNET, [a])).get(a) ?? []).not.toContain(id);
  });

  test("`keys chains` and `keys revoke` (the CLI, its own process) reach the index: entries stay, matching stops", async () => {
    const owner = await stack.createKey();
    const id = await newSubscription(owner);
    const a = VALID[17]!;
    await api("PATCH", addressesPath(id), { add: [mainnet(a), { chainId: NILE, address: a }] }, owner);
    const state = async (chainId: string) =>
      (await lookup(stack.registry.watchIndex.index(chainId), [a], { includeInactive: true })).get(a)?.find((w) => w.subscriptionId === id)?.active;
    const keys = async (...args: string[]) => {
      const proc = Bun.spawn([process.execPath, new URL("../../../cli/keys.ts", import.meta.url).pathname, ...args], {
        env: { ...process.env, DATABASE_URL: stack.config.databaseUrl, REDIS_URL: stack.config.redisUrl, REDIS_PREFIX: stack.config.redisPrefix, APP_SECRET: "" },
        stdout: "pipe",
        stderr: "pipe",
      });
      const code = await proc.exited;
      if (code !== 0) throw new Error(`keys ${args.join(" ")}: exit ${code}: ${await new Response(proc.stderr).text()}`);
    };
    expect([await state(MAINNET), await state(NILE)]).toEqual([true, true]);
    await keys("chains", owner.id, MAINNET);
    expect([await state(MAINNET), await state(NILE)]).toEqual([true, false]);
    await keys("chains", owner.id, `${MAINNET},${NILE}`);
    expect([await state(MAINNET), await state(NILE)]).toEqual([true, true]);
    await keys("revoke", owner.id);
    expect([await state(MAINNET), await state(NILE)]).toEqual([false, false]);
  }, 90_000);

  test("event kinds travel with the watcher", async () => {
    const id = await newSubscription();
    const a = VALID[16]!;
    await api("PATCH", addressesPath(id), { add: [mainnet(a)] });
    await api("PUT", `/v1/subscriptions/${id}`, { destination: { type: "https", url: TEST_DESTINATION }, events: ["service.ping"] });
    const found = await lookup(stack.registry.watchIndex.index(MAINNET), [a]);
    expect(found.get(a)?.find((w) => w.subscriptionId === id)?.events).toEqual(["service.ping"]);
  });
});
