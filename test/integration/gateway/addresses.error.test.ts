// Address filters through the public HTTP API, every way to get them wrong (docs/CONTRACT.md "Address filters",
// "Limits", "Pagination"): the contract's error, and nothing changed — in PostgreSQL and in the watch index.
// Real PostgreSQL and Redis (test/support/stack.ts); the per-subscription limit is lowered to 5 for this file.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { SQL } from "bun";
import fixtures from "../../../fixtures/tron/addresses.json";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { lookup } from "../../../common/watch-index/reader.ts";
import { startStack, TEST_DESTINATION, type Stack, type TestKey } from "../../support/stack.ts";

const VALID = fixtures.valid as string[];
const INVALID = (fixtures.invalid as { address: string; why: string }[]).map((i) => i.address);
const MAINNET = "tron:mainnet";
const NILE = "tron:nile";
const MAX_PER_SUBSCRIPTION = 5;

let stack: Stack;
let key: TestKey;
let sql: SQL;

beforeAll(async () => {
  stack = await startStack({ env: { MAX_ADDRESSES_PER_SUBSCRIPTION: String(MAX_PER_SUBSCRIPTION) } });
  key = await stack.createKey();
  sql = new SQL(stack.database.url, { max: 2 });
}, 60_000);

afterAll(async () => {
  await sql?.close();
  await stack?.stop();
}, 60_000);

interface Entry {
  chainId: string;
  address: string;
}

async function call(method: string, path: string, opts: { body?: unknown; raw?: string; key?: TestKey | null } = {}) {
  const k = opts.key === undefined ? key : opts.key;
  const headers: Record<string, string> = {};
  if (k) headers.authorization = `Bearer ${k.key}`;
  const payload = opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
  if (payload !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(stack.baseUrl + path, { method, headers, body: payload });
  const text = await res.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: res.status, body: (text ? JSON.parse(text) : null) as any };
}

async function newSubscription(k: TestKey = key): Promise<string> {
  const res = await call("POST", "/v1/subscriptions", {
    key: k,
    body: { destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.broadcasted"] },
  });
  expect(res.status).toBe(201);
  return res.body.id;
}

const mainnet = (address: string): Entry => ({ chainId: MAINNET, address });
const generated = (n: number) => Array.from({ length: n }, () => hexToBase58("41" + randomBytes(20).toString("hex")));
const path = (id: string) => `/v1/subscriptions/${id}/filters/addresses`;

/** What PostgreSQL holds for a subscription, plus its dateUpdated and stored count. */
async function stored(id: string) {
  const rows = (await sql`SELECT chain_id, address FROM subscription_addresses WHERE subscription_id = ${id} ORDER BY seq`) as {
    chain_id: string;
    address: string;
  }[];
  const [sub] = (await sql`SELECT updated_at, address_count FROM subscriptions WHERE id = ${id}`) as { updated_at: Date; address_count: number }[];
  return { list: rows.map((r) => ({ chainId: r.chain_id, address: r.address })), updatedAt: sub?.updated_at.getTime(), count: sub?.address_count };
}

async function indexed(id: string, entries: Entry[]): Promise<Entry[]> {
  const out: Entry[] = [];
  for (const chainId of [MAINNET, NILE, "tron:shasta"]) {
    const addrs = entries.filter((e) => e.chainId === chainId).map((e) => e.address);
    const found = await lookup(stack.registry.watchIndex.index(chainId), addrs, { includeInactive: true });
    for (const a of addrs) if (found.get(a)?.some((w) => w.subscriptionId === id)) out.push({ chainId, address: a });
  }
  return out;
}

function expectError(res: { status: number; body: { error: string; requestId: string } }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body.error).toBe(code);
  expect(typeof res.body.requestId).toBe("string");
}

describe("PATCH shape errors: invalid_request, nothing applied", () => {
  const cases: [string, string | undefined, unknown, string][] = [
    ["body is an array", undefined, [mainnet(VALID[0]!)], "/"],
    ["body is a string", undefined, "add", "/"],
    ["add is not an array", undefined, { add: mainnet(VALID[0]!) }, "/add"],
    ["remove is not an array", undefined, { remove: "x" }, "/remove"],
    ["an entry without address", undefined, { add: [{ chainId: MAINNET }] }, "/add/0/address"],
    ["an entry with a numeric chainId", undefined, { add: [mainnet(VALID[0]!), { chainId: 1, address: VALID[1] }] }, "/add/1/chainId"],
    ["an entry that is not an object", undefined, { remove: [VALID[0]] }, "/remove/0"],
    ["malformed JSON", '{"add": [', undefined, "/"],
  ];
  for (const [name, raw, body, param] of cases) {
    test(name, async () => {
      const id = await newSubscription();
      const res = await call("PATCH", path(id), raw === undefined ? { body } : { raw });
      expectError(res, 400, "invalid_request");
      expect(res.body.detail?.param).toBe(param);
      expect((await stored(id)).list).toEqual([]);
    });
  }

  test("both arrays empty or absent", async () => {
    const id = await newSubscription();
    for (const body of [{}, { add: [] }, { add: [], remove: [] }, { unknown: [mainnet(VALID[0]!)] }]) {
      const res = await call("PATCH", path(id), { body });
      expectError(res, 400, "invalid_request");
    }
    expect((await stored(id)).list).toEqual([]);
  });
});

describe("PATCH per-item validation: skipped with reason and detail, the valid rest applied", () => {
  test("every invalid fixture address is skipped invalid_address; the valid ones are added", async () => {
    const id = await newSubscription();
    const add = [...INVALID.map(mainnet), mainnet(VALID[0]!), mainnet(VALID[1]!)];
    const res = await call("PATCH", path(id), { body: { add } });
    expect(res.status).toBe(200);
    expect(res.body.results.added).toEqual([mainnet(VALID[0]!), mainnet(VALID[1]!)]);
    expect(res.body.results.skipped).toEqual(
      INVALID.map((address) => ({ input: mainnet(address), reason: "invalid_address", detail: expect.any(String) })),
    );
    expect((await stored(id)).list).toEqual([mainnet(VALID[0]!), mainnet(VALID[1]!)]);
    expect(await indexed(id, add)).toEqual([mainnet(VALID[0]!), mainnet(VALID[1]!)]);
  });

  test("hex forms, white space and case changes are invalid_address", async () => {
    const id = await newSubscription();
    const usdt = VALID[0]!;
    const variants = [` ${usdt}`, `${usdt} `, usdt.toLowerCase(), "41a614f803b6fd780986a42c78ec9c7f77e6ded13c", "0xa614f803b6fd780986a42c78ec9c7f77e6ded13c", ""];
    const res = await call("PATCH", path(id), { body: { add: variants.map(mainnet) } });
    expect(res.status).toBe(200);
    expect(res.body.results.skipped.map((s: { reason: string }) => s.reason)).toEqual(variants.map(() => "invalid_address"));
    expect(res.body.results.added).toEqual([]);
  });

  test("unknown chains are invalid_chain; an invalid duplicate is skipped once", async () => {
    const id = await newSubscription();
    const bad = [{ chainId: "eip155:1", address: VALID[2]! }, { chainId: "tron:Mainnet", address: VALID[2]! }, { chainId: "", address: VALID[2]! }];
    const res = await call("PATCH", path(id), { body: { add: [...bad, bad[0]!] } });
    expect(res.status).toBe(200);
    expect(res.body.results.skipped).toEqual(bad.map((input) => ({ input, reason: "invalid_chain", detail: expect.any(String) })));
    expect(res.body.subscription.dateUpdated).toBe(res.body.subscription.dateCreated);
    expect((await stored(id)).list).toEqual([]);
  });

  test("chain_not_enabled for a key limited to tron:mainnet; mainnet entries still apply", async () => {
    const limited = await stack.createKey({ chains: [MAINNET] });
    const id = await newSubscription(limited);
    const add = [{ chainId: NILE, address: VALID[3]! }, { chainId: "tron:shasta", address: VALID[3]! }, mainnet(VALID[3]!)];
    const res = await call("PATCH", path(id), { key: limited, body: { add, remove: [{ chainId: NILE, address: VALID[4]! }] } });
    expect(res.status).toBe(200);
    expect(res.body.results.added).toEqual([mainnet(VALID[3]!)]);
    expect(res.body.results.skipped).toEqual([
      { input: { chainId: NILE, address: VALID[4]! }, reason: "chain_not_enabled", detail: expect.any(String) },
      { input: add[0], reason: "chain_not_enabled", detail: expect.any(String) },
      { input: add[1], reason: "chain_not_enabled", detail: expect.any(String) },
    ]);
    expect(await indexed(id, add)).toEqual([mainnet(VALID[3]!)]);
  });

  test("nothing valid to apply: 200 with everything skipped, dateUpdated unchanged", async () => {
    const id = await newSubscription();
    await call("PATCH", path(id), { body: { add: [mainnet(VALID[5]!)] } });
    const before = await stored(id);
    await Bun.sleep(5);
    const res = await call("PATCH", path(id), { body: { remove: [mainnet(VALID[6]!)], add: [mainnet(INVALID[0]!)] } });
    expect(res.status).toBe(200);
    expect(res.body.results.skipped.map((s: { reason: string }) => s.reason)).toEqual(["not_found", "invalid_address"]);
    expect(await stored(id)).toEqual(before);
  });
});

describe("PUT: all or nothing", () => {
  test("an invalid item fails the request with its code and {index, input}; nothing changes", async () => {
    const id = await newSubscription();
    await call("PUT", path(id), { body: [mainnet(VALID[7]!)] });
    const before = await stored(id);
    const cases: [Entry, string][] = [
      [mainnet(INVALID[3]!), "invalid_address"],
      [{ chainId: "tron:testnet", address: VALID[8]! }, "invalid_chain"],
    ];
    for (const [entry, code] of cases) {
      const body = [mainnet(VALID[8]!), mainnet(VALID[9]!), entry, mainnet(VALID[10]!)];
      const res = await call("PUT", path(id), { body });
      expectError(res, 400, code);
      expect(res.body.detail).toEqual({ index: 2, input: entry });
    }
    expect(await stored(id)).toEqual(before);
    expect(await indexed(id, [mainnet(VALID[7]!), mainnet(VALID[8]!), mainnet(VALID[9]!)])).toEqual([mainnet(VALID[7]!)]);
  });

  test("chain_not_enabled with a key limited to tron:mainnet", async () => {
    const limited = await stack.createKey({ chains: [MAINNET] });
    const id = await newSubscription(limited);
    const res = await call("PUT", path(id), { key: limited, body: [mainnet(VALID[11]!), { chainId: NILE, address: VALID[11]! }] });
    expectError(res, 400, "chain_not_enabled");
    expect(res.body.detail).toEqual({ index: 1, input: { chainId: NILE, address: VALID[11]! } });
    expect((await stored(id)).list).toEqual([]);
  });

  test("the body must be a JSON array of entries", async () => {
    const id = await newSubscription();
    for (const [body, param] of [
      [{ addresses: [mainnet(VALID[0]!)] }, "/"],
      [[{ chainId: MAINNET }], "/0/address"],
      [[mainnet(VALID[0]!), "T"], "/1"],
    ] as [unknown, string][]) {
      const res = await call("PUT", path(id), { body });
      expectError(res, 400, "invalid_request");
      expect(res.body.detail?.param).toBe(param);
    }
    expect((await stored(id)).list).toEqual([]);
  });
});

describe("limits: addresses_limit_exceeded, nothing applied", () => {
  test("more than 10,000 entries in one request (PATCH add and remove together; PUT)", async () => {
    const id = await newSubscription();
    await call("PATCH", path(id), { body: { add: [mainnet(VALID[12]!)] } });
    const before = await stored(id);
    const many = generated(5_001).map(mainnet);
    const patch = await call("PATCH", path(id), { body: { add: many, remove: [mainnet(VALID[12]!), ...many.slice(0, 4_999)] } });
    expectError(patch, 400, "addresses_limit_exceeded");
    const put = await call("PUT", path(id), { body: [...many, ...generated(5_000).map(mainnet)] });
    expectError(put, 400, "addresses_limit_exceeded");
    expect(await stored(id)).toEqual(before);
    expect(await indexed(id, many.slice(0, 50))).toEqual([]);
  });

  test(`more than MAX_ADDRESSES_PER_SUBSCRIPTION (${MAX_PER_SUBSCRIPTION}) on the subscription`, async () => {
    const id = await newSubscription();
    const list = generated(7).map(mainnet);
    expectError(await call("PATCH", path(id), { body: { add: list.slice(0, 6) } }), 400, "addresses_limit_exceeded");
    expect((await stored(id)).list).toEqual([]);

    expect((await call("PATCH", path(id), { body: { add: list.slice(0, 3) } })).status).toBe(200);
    const before = await stored(id);
    const over = await call("PATCH", path(id), { body: { add: list.slice(3, 6) } });
    expectError(over, 400, "addresses_limit_exceeded");
    expect(await stored(id)).toEqual(before);
    expect(await indexed(id, list)).toEqual(list.slice(0, 3));

    // Removals apply first, so a swap that ends at the limit is fine; re-adding present entries does not count.
    const swap = await call("PATCH", path(id), { body: { remove: [list[0]!], add: [list[0]!, list[1]!, list[3]!, list[4]!] } });
    expect(swap.status).toBe(200);
    expect((await stored(id)).count).toBe(5);

    expectError(await call("PUT", path(id), { body: list.slice(0, 6) }), 400, "addresses_limit_exceeded");
    expect((await stored(id)).count).toBe(5);
    // Duplicates collapse before the limit is counted.
    const dup = await call("PUT", path(id), { body: [...list.slice(0, 5), list[0]!] });
    expect(dup.status).toBe(200);
  });
});

describe("not found", () => {
  test("another key's subscription, an unknown id and a malformed id are 404 on every address route", async () => {
    const other = await stack.createKey();
    const foreign = await newSubscription(other);
    await call("PATCH", path(foreign), { key: other, body: { add: [mainnet(VALID[13]!)] } });
    const before = await stored(foreign);
    for (const id of [foreign, "sub_01J00000000000000000000000", "sub_nope", "abc"]) {
      expectError(await call("PATCH", path(id), { body: { add: [mainnet(VALID[14]!)] } }), 404, "not_found");
      expectError(await call("PUT", path(id), { body: [] }), 404, "not_found");
      expectError(await call("GET", path(id)), 404, "not_found");
    }
    // 404 wins over a bad body.
    expectError(await call("PUT", path(foreign), { body: [mainnet(INVALID[0]!)] }), 404, "not_found");
    expect(await stored(foreign)).toEqual(before);
  });

  test("a deleted subscription's address routes are 404", async () => {
    const id = await newSubscription();
    await call("PATCH", path(id), { body: { add: [mainnet(VALID[15]!)] } });
    expect((await call("DELETE", `/v1/subscriptions/${id}`)).status).toBe(204);
    expectError(await call("GET", path(id)), 404, "not_found");
    expectError(await call("PATCH", path(id), { body: { remove: [mainnet(VALID[15]!)] } }), 404, "not_found");
    expect(await indexed(id, [mainnet(VALID[15]!)])).toEqual([]);
  });

  test("no or a bad API key is 401", async () => {
    const id = await newSubscription();
    const res = await call("GET", path(id), { key: null });
    expectError(res, 401, "unauthorized");
    expectError(await call("PATCH", path(id), { key: { id: "key_x", key: "whk_" + "A".repeat(43) }, body: { add: [] } }), 401, "unauthorized");
  });
});

describe("HTTP conventions on the address routes", () => {
  test("another method is 405 with Allow; a body without JSON content type is 415; over 1 MiB is 413", async () => {
    const id = await newSubscription();
    const post = await fetch(stack.baseUrl + path(id), { method: "POST", headers: { authorization: `Bearer ${key.key}` } });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toContain("PATCH");
    await post.arrayBuffer();
    const text = await fetch(stack.baseUrl + path(id), {
      method: "PATCH",
      headers: { authorization: `Bearer ${key.key}`, "content-type": "text/plain" },
      body: JSON.stringify({ add: [mainnet(VALID[0]!)] }),
    });
    expect(text.status).toBe(415);
    await text.arrayBuffer();
    const huge = await call("PUT", path(id), { raw: JSON.stringify(Array.from({ length: 16_000 }, () => mainnet(VALID[0]!))) });
    expectError(huge, 413, "payload_too_large");
    expect((await stored(id)).list).toEqual([]);
  });
});

describe("pagination errors", () => {
  test("altered tokens, tokens of another subscription, list or key are invalid_pagination_token", async () => {
    const a = await newSubscription();
    const b = await newSubscription();
    await call("PATCH", path(a), { body: { add: VALID.slice(0, 4).map(mainnet) } });
    await call("PATCH", path(b), { body: { add: VALID.slice(0, 4).map(mainnet) } });
    const token: string = (await call("GET", `${path(a)}?limit=2`)).body.nextPageToken;
    const subsToken: string = (await call("GET", "/v1/subscriptions?limit=1")).body.nextPageToken;
    const other = await stack.createKey();
    const c = await newSubscription(other);
    await call("PATCH", path(c), { key: other, body: { add: VALID.slice(0, 4).map(mainnet) } });
    const otherToken: string = (await call("GET", `${path(c)}?limit=2`, { key: other })).body.nextPageToken;
    const altered = token.slice(0, -2) + (token.endsWith("AA") ? "BB" : "AA");
    for (const [id, t] of [
      [a, altered],
      [a, "v2:" + token.slice(3)],
      [a, "garbage"],
      [b, token],
      [a, subsToken],
      [a, otherToken],
    ] as [string, string][]) {
      expectError(await call("GET", `${path(id)}?nextPageToken=${encodeURIComponent(t)}`), 400, "invalid_pagination_token");
    }
    expect((await call("GET", `${path(a)}?nextPageToken=${encodeURIComponent(token)}`)).status).toBe(200);
  });

  test("limit below 1 or not an integer is invalid_request", async () => {
    const id = await newSubscription();
    for (const limit of ["0", "-1", "1.5", "abc"]) {
      const res = await call("GET", `${path(id)}?limit=${limit}`);
      expectError(res, 400, "invalid_request");
      expect(res.body.detail?.param).toBe("limit");
    }
  });
});

describe("concurrency", () => {
  test("concurrent PATCHes on one subscription serialize: every entry added once, count, list and index agree", async () => {
    const limited = await stack.createKey();
    const id = await newSubscription(limited);
    // Under the per-subscription limit of this file: overlapping sets of the same 5 addresses, added and removed.
    const pool = VALID.slice(16, 21).map(mainnet);
    const requests = Array.from({ length: 16 }, (_, i) =>
      call("PATCH", path(id), {
        key: limited,
        body: i % 4 === 3 ? { remove: [pool[i % 5]!] } : { add: [pool[i % 5]!, pool[(i + 1) % 5]!, pool[(i + 2) % 5]!] },
      }),
    );
    const results = await Promise.all(requests);
    for (const r of results) expect(r.status).toBe(200);
    // Replaying the responses in any serial order must explain the final state: every added was absent before, every
    // removed present; so the final list equals (adds - removes) counted per entry.
    const net = new Map<string, number>();
    for (const r of results) {
      for (const e of r.body.results.added) net.set(e.address, (net.get(e.address) ?? 0) + 1);
      for (const e of r.body.results.removed) net.set(e.address, (net.get(e.address) ?? 0) - 1);
    }
    for (const v of net.values()) expect([0, 1]).toContain(v);
    const final = await stored(id);
    const present = [...net].filter(([, v]) => v === 1).map(([a]) => a).sort();
    expect(final.list.map((e) => e.address).sort()).toEqual(present);
    expect(final.count).toBe(final.list.length);
    expect((await indexed(id, pool)).map((e) => e.address).sort()).toEqual(present);
  });
});
