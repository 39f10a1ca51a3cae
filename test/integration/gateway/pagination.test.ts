// Keyset pagination of GET /v1/subscriptions (docs/CONTRACT.md "Pagination"): newest first, limits, and pages that stay
// consistent while subscriptions are created between page requests.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { SubscriptionJson } from "../../../gateway/render.ts";
import { apiClient, expectError, expectStatus, type ApiClient } from "../../support/http.ts";
import { startStack, TEST_DESTINATION, type Stack } from "../../support/stack.ts";

let stack: Stack;

interface Page {
  items: SubscriptionJson[];
  nextPageToken?: string;
}

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
});

async function newAccount(): Promise<ApiClient> {
  return apiClient(stack.baseUrl, (await stack.createKey()).key);
}

async function createMany(api: ApiClient, n: number, parallel = 8, label = "p"): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += parallel) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(parallel, n - i) }, (_, j) =>
        api.post("/v1/subscriptions", {
          destination: { type: "https", url: TEST_DESTINATION },
          events: ["service.ping"],
          description: `${label}${i + j}`,
        }),
      ),
    );
    for (const res of batch) {
      expectStatus(res, 201);
      ids.push(res.json<SubscriptionJson>().id);
    }
  }
  return ids;
}

async function page(api: ApiClient, query: string): Promise<Page> {
  const res = await api.get(`/v1/subscriptions${query}`);
  expectStatus(res, 200);
  return res.json<Page>();
}

/** Newest first as the contract orders it: dateCreated, then id, both descending. */
function newestFirst(a: SubscriptionJson, b: SubscriptionJson): number {
  if (a.dateCreated !== b.dateCreated) return a.dateCreated < b.dateCreated ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

describe("GET /v1/subscriptions pages", () => {
  test("no item is skipped or shown twice while others are created between page requests", async () => {
    const api = await newAccount();
    // Created in parallel bursts, so many share a millisecond: the order must still be total.
    const initial = await createMany(api, 30, 10, "initial");
    const expected = (await page(api, "?limit=200")).items;
    expect(expected.map((s) => s.id).sort()).toEqual([...initial].sort());
    expect([...expected].sort(newestFirst).map((s) => s.id)).toEqual(expected.map((s) => s.id));

    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const p = await page(api, `?limit=4${token ? `&nextPageToken=${encodeURIComponent(token)}` : ""}`);
      seen.push(...p.items.map((s) => s.id));
      token = p.nextPageToken;
      pages++;
      // Newer subscriptions arrive while the client pages through older ones.
      await createMany(api, 3, 3, `late${pages}-`);
    } while (token);

    expect(seen).toEqual(expected.map((s) => s.id));
    expect(new Set(seen).size).toBe(seen.length);
    expect(pages).toBe(Math.ceil(30 / 4));
    // The late ones are on a fresh first page, newest first.
    const fresh = await page(api, "?limit=3");
    expect(fresh.items.map((s) => s.description).sort()).toEqual([`late${pages}-0`, `late${pages}-1`, `late${pages}-2`]);
  });

  test("default limit 50; limit above 200 is clamped to 200; the last page has no token", async () => {
    const api = await newAccount();
    await createMany(api, 205, 16);
    const byDefault = await page(api, "");
    expect(byDefault.items).toHaveLength(50);
    expect(byDefault.nextPageToken).toStartWith("v1:");

    const clamped = await page(api, "?limit=1000");
    expect(clamped.items).toHaveLength(200);
    expect(clamped.nextPageToken).toStartWith("v1:");
    const rest = await page(api, `?limit=1000&nextPageToken=${encodeURIComponent(clamped.nextPageToken!)}`);
    expect(rest.items).toHaveLength(5);
    expect("nextPageToken" in rest).toBe(false);
    const all = [...clamped.items, ...rest.items].map((s) => s.id);
    expect(new Set(all).size).toBe(205);

    const exact = await page(api, "?limit=200");
    expect(exact.items.map((s) => s.id)).toEqual(clamped.items.map((s) => s.id));
  });

  test("a page of exactly the remaining items ends the list (no empty extra page)", async () => {
    const api = await newAccount();
    await createMany(api, 4, 4);
    const first = await page(api, "?limit=2");
    expect(first.nextPageToken).toBeDefined();
    const second = await page(api, `?limit=2&nextPageToken=${encodeURIComponent(first.nextPageToken!)}`);
    expect(second.items).toHaveLength(2);
    expect(second.nextPageToken).toBeUndefined();
  });

  test("a deleted subscription leaves the pages without disturbing the cursor", async () => {
    const api = await newAccount();
    await createMany(api, 6, 1);
    const first = await page(api, "?limit=3");
    // Delete the cursor's own item: the next page still continues right after it.
    const last = first.items.at(-1)!;
    expect((await api.delete(`/v1/subscriptions/${last.id}`)).status).toBe(204);
    const second = await page(api, `?limit=3&nextPageToken=${encodeURIComponent(first.nextPageToken!)}`);
    expect(second.items).toHaveLength(3);
    expect([...first.items, ...second.items].map((s) => s.id)).not.toContain(undefined);
    expect(new Set([...first.items, ...second.items].map((s) => s.id)).size).toBe(6);
  });

  test("a token used with another limit still continues; a token with trailing garbage does not", async () => {
    const api = await newAccount();
    await createMany(api, 5, 5);
    const first = await page(api, "?limit=2");
    const rest = await page(api, `?limit=10&nextPageToken=${encodeURIComponent(first.nextPageToken!)}`);
    expect(rest.items).toHaveLength(3);
    expectError(
      await api.get(`/v1/subscriptions?nextPageToken=${encodeURIComponent(first.nextPageToken! + "x")}`),
      400,
      "invalid_pagination_token",
      null,
    );
  });
});
