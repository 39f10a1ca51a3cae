// Every error code of the subscription endpoints with its exact status and body; bad input changes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { staticResolver } from "../../../common/ssrf.ts";
import type { SubscriptionJson } from "../../../gateway/render.ts";
import { apiClient, expectError, expectStatus, type ApiClient } from "../../support/http.ts";
import { startStack, TEST_DESTINATION, TEST_HOSTS, type Stack } from "../../support/stack.ts";
import { subscriptionSecretBinding } from "../../../registry/sealed-columns.ts";

let stack: Stack;
let api: ApiClient;

const valid = () => ({ destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.broadcasted"] });
const UNKNOWN_ID = "sub_01HZZZZZZZZZZZZZZZZZZZZZZZ";

beforeAll(async () => {
  stack = await startStack({
    resolver: staticResolver({
      ...TEST_HOSTS,
      "nxdomain.example.com": [],
      "servfail.example.com": new Error("SERVFAIL"),
    }),
  });
  api = apiClient(stack.baseUrl, (await stack.createKey()).key);
});
afterAll(async () => {
  await stack?.stop();
});

async function count(): Promise<number> {
  const res = await api.get("/v1/subscriptions?limit=200");
  expectStatus(res, 200);
  return res.json<{ items: unknown[] }>().items.length;
}

async function createOne(): Promise<SubscriptionJson> {
  const res = await api.post("/v1/subscriptions", { ...valid(), description: "original" });
  expectStatus(res, 201);
  return res.json<SubscriptionJson>();
}

describe("POST /v1/subscriptions errors (and nothing is created)", () => {
  const cases: [string, unknown, number, string, Record<string, unknown> | null | undefined][] = [
    ["destination missing", { events: ["service.ping"] }, 400, "invalid_request", { param: "/destination" }],
    ["events missing", { destination: { type: "https", url: TEST_DESTINATION } }, 400, "invalid_request", { param: "/events" }],
    ["destination.url missing", { destination: { type: "https" }, events: ["service.ping"] }, 400, "invalid_request", { param: "/destination/url" }],
    ["destination.type missing", { destination: { url: TEST_DESTINATION }, events: ["service.ping"] }, 400, "invalid_request", { param: "/destination/type" }],
    ["destination.url of the wrong type", { destination: { type: "https", url: 5 }, events: ["service.ping"] }, 400, "invalid_request", { param: "/destination/url" }],
    ["destination not an object", { destination: "https://x", events: ["service.ping"] }, 400, "invalid_request", { param: "/destination" }],
    ["events not an array", { ...valid(), events: "service.ping" }, 400, "invalid_request", { param: "/events" }],
    ["an event not a string", { ...valid(), events: ["service.ping", 7] }, 400, "invalid_request", { param: "/events/1" }],
    ["status of the wrong type", { ...valid(), status: true }, 400, "invalid_request", { param: "/status" }],
    ["status not enabled/disabled", { ...valid(), status: "paused" }, 400, "invalid_request", { param: "/status" }],
    ["description of the wrong type", { ...valid(), description: 12 }, 400, "invalid_request", { param: "/description" }],
    ["description null", { ...valid(), description: null }, 400, "invalid_request", { param: "/description" }],
    ["destination.type not https", { ...valid(), destination: { type: "sqs", url: TEST_DESTINATION } }, 400, "invalid_request", { param: "/destination/type" }],
    ["events empty", { ...valid(), events: [] }, 400, "invalid_request", { param: "/events" }],
    [
      "17 distinct events",
      { ...valid(), events: Array.from({ length: 17 }, (_, i) => `x.${i}`) },
      400,
      "invalid_request",
      { param: "/events" },
    ],
    ["http URL", { ...valid(), destination: { type: "https", url: "http://hooks.example.com/x" } }, 400, "invalid_request", { param: "/destination/url", reason: "must use https" }],
    ["not a URL", { ...valid(), destination: { type: "https", url: "not a url" } }, 400, "invalid_request", { param: "/destination/url", reason: "is not a valid URL" }],
    ["user-info in the URL", { ...valid(), destination: { type: "https", url: "https://u:p@hooks.example.com/" } }, 400, "invalid_request", { param: "/destination/url", reason: "must not contain user-info" }],
    [
      "URL over 2048 characters",
      { ...valid(), destination: { type: "https", url: `https://hooks.example.com/${"a".repeat(2030)}` } },
      400,
      "invalid_request",
      { param: "/destination/url", reason: "is longer than 2048 characters" },
    ],
    ["host that does not resolve", { ...valid(), destination: { type: "https", url: "https://nxdomain.example.com/" } }, 400, "invalid_request", { param: "/destination/url", reason: "does not resolve" }],
    ["private IP literal", { ...valid(), destination: { type: "https", url: "https://10.0.0.5/hook" } }, 400, "ssrf_blocked", { ip: "10.0.0.5", cidr: "10.0.0.0/8" }],
    ["unknown event", { ...valid(), events: ["wallet.transfer.broadcasted", "wallet.exploded"] }, 400, "unsupported_event", { event: "wallet.exploded" }],
    ["unknown lifecycle-like event", { ...valid(), events: ["wallet.transfer.dropped"] }, 400, "unsupported_event", { event: "wallet.transfer.dropped" }],
    ["an activity family without its stage", { ...valid(), events: ["wallet.approval"] }, 400, "unsupported_event", { event: "wallet.approval" }],
    ["a stage an activity does not have", { ...valid(), events: ["wallet.resource.failed"] }, 400, "unsupported_event", { event: "wallet.resource.failed" }],
    ["description of 513 code points", { ...valid(), description: "é".repeat(513) }, 400, "description_too_long", { max: 512 }],
    ["resolver failure", { ...valid(), destination: { type: "https", url: "https://servfail.example.com/" } }, 503, "service_unavailable", null],
    ["body a JSON array", [valid()], 400, "invalid_request", { param: "/" }],
    ["body a JSON string", '"hello"', 400, "invalid_request", { param: "/" }],
    ["malformed JSON", '{"destination": ', 400, "invalid_request", { param: "/" }],
  ];

  for (const [name, body, status, code, detail] of cases) {
    test(`${name} → ${status} ${code}`, async () => {
      const before = await count();
      expectError(await api.post("/v1/subscriptions", body), status, code, detail);
      expect(await count()).toBe(before);
    });
  }

  test("no body at all → 400 invalid_request", async () => {
    expectError(await api.request("POST", "/v1/subscriptions", { headers: { "content-type": "application/json" } }), 400, "invalid_request", {
      param: "/",
    });
  });
});

describe("GET /v1/subscriptions errors", () => {
  test.each([
    ["0"],
    ["-1"],
    ["1.5"],
    ["abc"],
  ])("limit=%s → 400 invalid_request (param limit)", async (limit) => {
    expectError(await api.get(`/v1/subscriptions?limit=${limit}`), 400, "invalid_request", { param: "limit" });
  });

  test.each([
    ["garbage", "garbage"],
    ["another version", "v2:abc.def"],
    ["v1 without a signature", "v1:eyJsIjoic3Vic2NyaXB0aW9ucyJ9"],
  ])("%s token → 400 invalid_pagination_token", async (_name, token) => {
    expectError(await api.get(`/v1/subscriptions?nextPageToken=${encodeURIComponent(token)}`), 400, "invalid_pagination_token", null);
  });

  test("an altered token → 400 invalid_pagination_token", async () => {
    for (let i = 0; i < 3; i++) await createOne();
    const page = (await api.get("/v1/subscriptions?limit=1")).json<{ nextPageToken: string }>();
    const token = page.nextPageToken;
    const [body, sig] = token.slice(3).split(".") as [string, string];
    const payload = JSON.parse(Buffer.from(body, "base64url").toString());
    payload.c = { ...payload.c, t: (payload.c?.t ?? 0) + 1 };
    const forged = `v1:${Buffer.from(JSON.stringify(payload)).toString("base64url")}.${sig}`;
    expectError(await api.get(`/v1/subscriptions?nextPageToken=${encodeURIComponent(forged)}`), 400, "invalid_pagination_token", null);
    const flipped = token.slice(0, -2) + (token.at(-2) === "A" ? "B" : "A") + token.at(-1);
    expectError(await api.get(`/v1/subscriptions?nextPageToken=${encodeURIComponent(flipped)}`), 400, "invalid_pagination_token", null);
  });
});

describe("GET/PUT/DELETE/rotate on a missing or malformed id → 404 not_found", () => {
  const ids = [UNKNOWN_ID, "sub_123", "abc", "evt_01HZZZZZZZZZZZZZZZZZZZZZZZ", "sub_01hzzzzzzzzzzzzzzzzzzzzzzz", "%20"];
  for (const id of ids) {
    test(`id ${JSON.stringify(id)}`, async () => {
      expectError(await api.get(`/v1/subscriptions/${id}`), 404, "not_found", null);
      expectError(await api.put(`/v1/subscriptions/${id}`, valid()), 404, "not_found", null);
      if (id !== UNKNOWN_ID) {
        // A malformed id cannot exist: not found comes before the body's own problems.
        expectError(await api.put(`/v1/subscriptions/${id}`, { destination: 1 }), 404, "not_found", null);
      }
      expectError(await api.delete(`/v1/subscriptions/${id}`), 404, "not_found", null);
      expectError(await api.post(`/v1/subscriptions/${id}/secrets/rotate`), 404, "not_found", null);
    });
  }
});

// A real contract (USDT on mainnet) and the same string with its last character changed (checksum broken).
const USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const BAD_CHECKSUM = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u";
const TRX = { standard: "TRX" };
const withMatch = (match: unknown) => ({ ...valid(), match });
const assetsAt3 = (bad: Record<string, unknown>) => withMatch({ assets: [TRX, { standard: "TRC10", tokenId: "1002000" }, { standard: "TRC20", contract: USDT }, bad] });

const MATCH_CASES: [string, unknown, string][] = [
  ["match not an object", withMatch("incoming"), "/match"],
  ["match an array", withMatch([]), "/match"],
  ["assets not an array", withMatch({ assets: "TRX" }), "/match/assets"],
  ["assets empty (null means every asset)", withMatch({ assets: [] }), "/match/assets"],
  ["101 assets", withMatch({ assets: Array.from({ length: 101 }, (_, i) => ({ standard: "TRC10", tokenId: String(1_000_001 + i) })) }), "/match/assets"],
  ["an asset not an object", assetsAt3("TRX" as unknown as Record<string, unknown>), "/match/assets/3"],
  ["unknown standard", assetsAt3({ standard: "TRC721", contract: USDT }), "/match/assets/3/standard"],
  ["standard missing", assetsAt3({ contract: USDT }), "/match/assets/3/standard"],
  ["standard of the wrong case", assetsAt3({ standard: "trx" }), "/match/assets/3/standard"],
  ["TRC20 contract with a bad checksum", assetsAt3({ standard: "TRC20", contract: BAD_CHECKSUM }), "/match/assets/3/contract"],
  ["TRC20 contract in hex", assetsAt3({ standard: "TRC20", contract: "41a614f803b6fd780986a42c78ec9c7f77e6ded13c" }), "/match/assets/3/contract"],
  ["TRC20 without contract", assetsAt3({ standard: "TRC20" }), "/match/assets/3/contract"],
  ["TRC20 contract of the wrong type", assetsAt3({ standard: "TRC20", contract: 41 }), "/match/assets/3/contract"],
  ["TRC10 without tokenId", assetsAt3({ standard: "TRC10" }), "/match/assets/3/tokenId"],
  ["TRC10 tokenId not numeric", assetsAt3({ standard: "TRC10", tokenId: "BTT" }), "/match/assets/3/tokenId"],
  ["TRC10 tokenId with a leading zero", assetsAt3({ standard: "TRC10", tokenId: "01002000" }), "/match/assets/3/tokenId"],
  ["TRC10 tokenId as a number", assetsAt3({ standard: "TRC10", tokenId: 1002000 }), "/match/assets/3/tokenId"],
  ["tokenId on a TRX entry", assetsAt3({ standard: "TRX", tokenId: "1002000" }), "/match/assets/3/tokenId"],
  ["contract on a TRC10 entry", assetsAt3({ standard: "TRC10", tokenId: "1002001", contract: USDT }), "/match/assets/3/contract"],
  ["minAmount negative", assetsAt3({ standard: "TRC10", tokenId: "1002001", minAmount: "-1" }), "/match/assets/3/minAmount"],
  ["minAmount with decimals", assetsAt3({ standard: "TRC10", tokenId: "1002001", minAmount: "1.5" }), "/match/assets/3/minAmount"],
  ["minAmount not numeric", assetsAt3({ standard: "TRC10", tokenId: "1002001", minAmount: "ten" }), "/match/assets/3/minAmount"],
  ["minAmount empty", assetsAt3({ standard: "TRC10", tokenId: "1002001", minAmount: "" }), "/match/assets/3/minAmount"],
  ["minAmount in exponent form", assetsAt3({ standard: "TRC10", tokenId: "1002001", minAmount: "1e6" }), "/match/assets/3/minAmount"],
  ["minAmount above 2^256-1", assetsAt3({ standard: "TRC10", tokenId: "1002001", minAmount: (1n << 256n).toString() }), "/match/assets/3/minAmount"],
  ["minAmount as a JSON number", assetsAt3({ standard: "TRC10", tokenId: "1002001", minAmount: 5 }), "/match/assets/3/minAmount"],
  ["an asset listed twice", assetsAt3({ standard: "TRC20", contract: USDT, minAmount: "5" }), "/match/assets/3"],
  ["directions empty", withMatch({ directions: [] }), "/match/directions"],
  ["an unknown direction", withMatch({ directions: ["incoming", "sideways"] }), "/match/directions/1"],
  ["directions a string", withMatch({ directions: "incoming" }), "/match/directions"],
  ["includeZeroValue a string", withMatch({ includeZeroValue: "true" }), "/match/includeZeroValue"],
];

describe("match conditions: invalid → 400 invalid_request with the JSON pointer; nothing created or changed", () => {
  for (const [name, body, param] of MATCH_CASES) {
    test(`POST: ${name} → ${param}`, async () => {
      const before = await count();
      expectError(await api.post("/v1/subscriptions", body), 400, "invalid_request", { param });
      expect(await count()).toBe(before);
    });
  }

  test("PUT with an invalid match changes nothing (not even the conditions already stored)", async () => {
    const match = { assets: [{ standard: "TRX", minAmount: "1000000" }], directions: ["incoming"], includeZeroValue: true };
    const created = await api.post("/v1/subscriptions", { ...valid(), match });
    expectStatus(created, 201);
    const sub = created.json<SubscriptionJson>();
    for (const [, body, param] of MATCH_CASES) {
      expectError(await api.put(`/v1/subscriptions/${sub.id}`, body), 400, "invalid_request", { param });
    }
    const after = (await api.get(`/v1/subscriptions/${sub.id}`)).json<SubscriptionJson>();
    const { secret: _s, ...destination } = sub.destination;
    expect(after).toEqual({ ...sub, destination, filters: { addresses: [], hasMore: false } });
    expect(after.match).toEqual(match as SubscriptionJson["match"]);
  });
});

describe("PUT /v1/subscriptions/:id errors (and nothing changes)", () => {
  let sub: SubscriptionJson;
  beforeAll(async () => {
    sub = await createOne();
  });

  const cases: [string, unknown, number, string, Record<string, unknown> | null | undefined][] = [
    ["destination missing", { events: ["service.ping"] }, 400, "invalid_request", { param: "/destination" }],
    ["events missing", { destination: { type: "https", url: TEST_DESTINATION } }, 400, "invalid_request", { param: "/events" }],
    ["status invalid", { ...valid(), status: "on" }, 400, "invalid_request", { param: "/status" }],
    ["events empty", { ...valid(), events: [] }, 400, "invalid_request", { param: "/events" }],
    ["private URL", { ...valid(), destination: { type: "https", url: "https://[::ffff:192.168.1.1]/" } }, 400, "ssrf_blocked", { ip: "192.168.1.1", cidr: "192.168.0.0/16" }],
    ["unknown event", { ...valid(), events: ["nope"] }, 400, "unsupported_event", { event: "nope" }],
    ["description too long", { ...valid(), description: "x".repeat(513) }, 400, "description_too_long", { max: 512 }],
    ["description wrong type", { ...valid(), description: ["x"] }, 400, "invalid_request", { param: "/description" }],
  ];
  for (const [name, body, status, code, detail] of cases) {
    test(`${name} → ${status} ${code}`, async () => {
      expectError(await api.put(`/v1/subscriptions/${sub.id}`, body), status, code, detail);
      const after = (await api.get(`/v1/subscriptions/${sub.id}`)).json<SubscriptionJson>();
      const { secret: _s, ...destination } = sub.destination;
      expect(after).toEqual({ ...sub, destination, filters: { addresses: [], hasMore: false } });
    });
  }
});

describe("POST /v1/subscriptions/:id/secrets/rotate errors (and the secret stays)", () => {
  let sub: SubscriptionJson;
  beforeAll(async () => {
    sub = await createOne();
  });

  const cases: [string, unknown, Record<string, unknown>][] = [
    ["negative grace", { gracePeriodSeconds: -1 }, { param: "/gracePeriodSeconds" }],
    ["grace over a week", { gracePeriodSeconds: 604801 }, { param: "/gracePeriodSeconds" }],
    ["fractional grace", { gracePeriodSeconds: 1.5 }, { param: "/gracePeriodSeconds" }],
    ["grace as a string", { gracePeriodSeconds: "60" }, { param: "/gracePeriodSeconds" }],
    ["secret without prefix", { secret: Buffer.alloc(32).toString("base64") }, { param: "/secret" }],
    ["secret too short", { secret: "whsec_" + Buffer.alloc(23).toString("base64") }, { param: "/secret" }],
    ["secret too long", { secret: "whsec_" + Buffer.alloc(65).toString("base64") }, { param: "/secret" }],
    ["secret not base64", { secret: "whsec_" + "!".repeat(40) }, { param: "/secret" }],
    ["secret of the wrong type", { secret: 42 }, { param: "/secret" }],
    ["body a JSON array", [1], { param: "/" }],
  ];
  for (const [name, body, detail] of cases) {
    test(`${name} → 400 invalid_request`, async () => {
      expectError(await api.post(`/v1/subscriptions/${sub.id}/secrets/rotate`, body), 400, "invalid_request", detail);
      const row = await stack.registry.store.db.$client`SELECT secret, previous_secret FROM subscriptions WHERE id = ${sub.id}`;
      const stored = row[0] as { secret: string; previous_secret: string | null };
      expect(stack.registry.store.open(stored.secret, subscriptionSecretBinding(sub.id))).toBe(sub.destination.secret!);
      expect(stored.previous_secret).toBeNull();
    });
  }
});
