// The event API through the gateway: test events, the delivery log, manual retry, Idempotency-Key on test and retry,
// and DELETE of a subscription taking its events along. Real registry, deliverer, PostgreSQL, Redis and receiver.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { createTronWebhooksClient } from "../../../clients/typescript/src/index.ts";
import { call, startEventsStack, type EventsStack } from "../../support/events.ts";

type Ev = {
  id: string; subscriptionId: string; kind: string; chainId: string | null; status: string; attempts: number;
  deliveryCount: number; responseStatus: number | null; responseBody: string | null; heldReason: string | null;
  payload: { id: string; kind: string; date: string; subscriptionId: string; data: Record<string, unknown> }; dateCreated: string;
};

let env: EventsStack;
let base: string;

beforeAll(async () => {
  env = await startEventsStack();
  base = env.stack.baseUrl;
}, 60_000);

afterAll(async () => {
  await env?.stop();
}, 60_000);

/** A key and, through the generated client as a customer would, a subscription to the receiver's `path`. */
async function setup(path: string, chains?: string[]) {
  const { key } = await env.stack.createKey(chains ? { chains } : {});
  const created = await createTronWebhooksClient({ baseUrl: base, apiKey: key }).POST("/v1/subscriptions", {
    body: { destination: { type: "https", url: env.receiver.url(path) }, events: ["wallet.transfer.broadcasted"] },
  });
  expect(created.response.status).toBe(201);
  const secret = created.data!.destination.secret!;
  env.receiver.setSecrets(path, [secret]);
  return { key, id: created.data!.id, secret };
}

async function waitFor(key: string, subId: string, eventId: string, pred: (e: Ev) => boolean): Promise<Ev> {
  const api = createTronWebhooksClient({ baseUrl: base, apiKey: key });
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res = await api.GET("/v1/subscriptions/{id}/events/{eventId}", { params: { path: { id: subId, eventId } } });
    if (res.response.status === 200 && res.data && pred(res.data)) return res.data;
    if (Date.now() > deadline) throw new Error(`event not in the expected state: ${JSON.stringify(res.data ?? res.error)}`);
    await Bun.sleep(25);
  }
}

describe("POST /v1/subscriptions/:id/test", () => {
  test("no body: a service.ping event view (pending), then delivered and signed", async () => {
    const s = await setup("/ev-ping");
    const res = await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`);
    expect(res.status).toBe(200);
    const e = res.body;
    expect(e.id).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(e).toEqual({
      id: e.id, subscriptionId: s.id, kind: "service.ping", chainId: null, status: "pending", attempts: 0, deliveryCount: 0,
      responseStatus: null, responseBody: null, heldReason: null,
      payload: { id: e.id, kind: "service.ping", date: e.payload.date, subscriptionId: s.id, data: { message: expect.any(String) } },
      dateCreated: e.dateCreated,
    });
    expect(new Date(e.dateCreated).toISOString()).toBe(e.dateCreated);
    const done = await waitFor(s.key, s.id, e.id, (v) => v.status === "delivered");
    expect(done).toMatchObject({ attempts: 1, deliveryCount: 1, responseStatus: 200, responseBody: "ok" });
    const [d] = env.receiver.deliveries("/ev-ping");
    expect(d!.verified).toBe(true);
    expect(d!.headers["webhook-id"]).toBe(e.id);
    expect(JSON.parse(d!.body)).toEqual(e.payload);
    new Webhook(s.secret).verify(d!.body, d!.headers);
    // The view is answered as text with the payload spliced in: the very bytes delivered, and the headers (media
    // type, request id, rate limit) every JSON answer of the API has.
    const view = await fetch(`${base}/v1/subscriptions/${s.id}/events/${e.id}`, { headers: { authorization: `Bearer ${s.key}`, "x-request-id": "ev-view-1" } });
    expect(await view.text()).toContain(`"payload":${d!.body},`);
    const sub = await call(base, s.key, "GET", `/v1/subscriptions/${s.id}`);
    expect(view.headers.get("content-type")).toBe(sub.headers.get("content-type")!);
    expect(view.headers.get("x-request-id")).toBe("ev-view-1");
    expect(view.headers.get("ratelimit-limit")).toMatch(/^\d+$/);
  });

  test("kind wallet.transfer.broadcasted: a sample transfer marked test, on mainnet or the key's first chain", async () => {
    const s = await setup("/ev-sample");
    const res = await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`, { kind: "wallet.transfer.broadcasted" });
    expect(res.status).toBe(200);
    expect(res.body.kind).toBe("wallet.transfer.broadcasted");
    expect(res.body.chainId).toBe("tron:mainnet");
    const data = res.body.payload.data;
    expect(data.test).toBe(true);
    expect(data.chainId).toBe("tron:mainnet");
    expect(Object.keys(data)).toEqual([
      "chainId", "blockNumber", "blockHash", "blockTimestamp", "txId", "logIndex", "internalIndex", "from", "to", "amount",
      "asset", "fee", "memo", "matchedAddresses", "test", "backfill",
    ]);
    expect(data).toMatchObject({ internalIndex: -1, fee: expect.stringMatching(/^\d+$/), memo: null });
    const nile = await setup("/ev-sample-nile", ["tron:shasta", "tron:nile"]);
    const other = await call<Ev>(base, nile.key, "POST", `/v1/subscriptions/${nile.id}/test`, { kind: "wallet.transfer.broadcasted" });
    expect(other.body.chainId).toBe("tron:shasta");
    expect(other.body.payload.data.chainId).toBe("tron:shasta");
  });

  test("kinds wallet.transfer.confirmed and .failed: realistic samples with every lifecycle field, delivered", async () => {
    const s = await setup("/ev-final");
    const confirmed = await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`, { kind: "wallet.transfer.confirmed" });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toMatchObject({ kind: "wallet.transfer.confirmed", chainId: "tron:mainnet", status: "pending" });
    const c = confirmed.body.payload.data;
    expect(Object.keys(c)).toEqual([
      "chainId", "blockNumber", "blockHash", "blockTimestamp", "txId", "logIndex", "internalIndex", "from", "to", "amount",
      "asset", "fee", "memo", "solidifiedBlockNumber", "matchedAddresses", "test", "backfill",
    ]);
    expect(c).toMatchObject({
      test: true, chainId: "tron:mainnet", logIndex: 0, internalIndex: -1, memo: null, fee: expect.stringMatching(/^\d+$/),
      asset: { standard: "TRC20", contract: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", symbol: "USDT", decimals: 6 },
    });
    expect(c.solidifiedBlockNumber as number).toBeGreaterThan(c.blockNumber as number);

    const failed = await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`, { kind: "wallet.transfer.failed" });
    expect(failed.status).toBe(200);
    expect(failed.body.kind).toBe("wallet.transfer.failed");
    const f = failed.body.payload.data;
    expect(Object.keys(f)).toEqual([
      "chainId", "blockNumber", "blockHash", "blockTimestamp", "txId", "logIndex", "internalIndex", "from", "to", "amount",
      "asset", "fee", "memo", "reason", "solidifiedBlockNumber", "matchedAddresses", "test", "backfill",
    ]);
    // A failed call emits no log: decoded from its call data, so logIndex -1; charged a fee all the same.
    expect(f).toMatchObject({ test: true, reason: "REVERT", logIndex: -1, internalIndex: -1, memo: null });
    expect(BigInt(f.fee as string)).toBeGreaterThan(0n);
    expect(f.txId).not.toBe(c.txId);

    for (const e of [confirmed.body, failed.body]) {
      await waitFor(s.key, s.id, e.id, (v) => v.status === "delivered");
      const d = env.receiver.deliveries("/ev-final").find((x) => x.headers["webhook-id"] === e.id)!;
      expect(d.verified).toBe(true);
      expect(JSON.parse(d.body)).toEqual(e.payload);
    }
    const shasta = await setup("/ev-final-shasta", ["tron:shasta"]);
    const onShasta = await call<Ev>(base, shasta.key, "POST", `/v1/subscriptions/${shasta.id}/test`, { kind: "wallet.transfer.failed" });
    expect(onShasta.body.payload.data).toMatchObject({ chainId: "tron:shasta", reason: "REVERT", asset: { standard: "TRX" } });
  });

  test("account activity kinds: a realistic sample of each, marked test, delivered, found by the search", async () => {
    const s = await setup("/ev-activity");
    const place = ["chainId", "blockNumber", "blockHash", "blockTimestamp", "txId", "logIndex"];
    const samples: Record<string, { fields: string[]; data: Record<string, unknown> }> = {
      approval: {
        fields: ["owner", "spender", "amount", "unlimited", "asset"],
        data: {
          logIndex: 0, spender: "TKzxdSv2FZKQrEqkKVgp5DcwEXBEKMg2Ax", unlimited: true, amount: ((1n << 256n) - 1n).toString(),
          asset: { type: "fungible", standard: "TRC20", contract: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", tokenId: null, symbol: "USDT", decimals: 6 },
          matchedAddresses: [{ chainId: "tron:mainnet", address: expect.any(String), role: "owner" }],
        },
      },
      permission: {
        fields: ["address", "owner", "witness", "actives"],
        // A co-signer added: two keys of weight 1 and a threshold of 2, for the owner and the active permission.
        data: { logIndex: -1, fee: "100000000", owner: { threshold: 2, keys: [expect.any(Object), expect.any(Object)] }, witness: null, actives: [expect.objectContaining({ name: "active", threshold: 2 })] },
      },
      resource: {
        fields: ["type", "owner", "resource", "amount", "receiver", "lock", "lockPeriod", "votes"],
        data: { logIndex: -1, type: "delegate", owner: expect.any(String), resource: "ENERGY", amount: expect.stringMatching(/^\d+$/), receiver: expect.any(String), lock: true, lockPeriod: 28800, votes: null },
      },
      blacklist: {
        fields: ["type", "address", "amount", "asset"],
        data: { logIndex: 0, type: "added", amount: null, asset: expect.objectContaining({ contract: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", symbol: "USDT" }), matchedAddresses: [expect.objectContaining({ role: "blacklisted" })] },
      },
    };
    const made: Ev[] = [];
    for (const [family, { fields, data }] of Object.entries(samples)) {
      for (const stage of ["broadcasted", "confirmed"]) {
        const kind = `wallet.${family}.${stage}`;
        const res = await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`, { kind });
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ kind, chainId: "tron:mainnet", status: "pending" });
        const d = res.body.payload.data;
        const final = stage === "confirmed" ? ["solidifiedBlockNumber"] : [];
        expect(Object.keys(d)).toEqual([...place, ...fields, "fee", ...final, "matchedAddresses", "backfill", "test"]);
        expect(d).toMatchObject({ ...data, chainId: "tron:mainnet", test: true, backfill: null });
        if (stage === "confirmed") expect(d.solidifiedBlockNumber as number).toBeGreaterThan(d.blockNumber as number);
        made.push(res.body);
      }
    }
    for (const e of made) {
      await waitFor(s.key, s.id, e.id, (v) => v.status === "delivered");
      const d = env.receiver.deliveries("/ev-activity").find((x) => x.headers["webhook-id"] === e.id)!;
      expect(d.verified).toBe(true);
      expect(JSON.parse(d.body)).toEqual(e.payload);
    }
    // The event search filters by an activity kind, and finds a sample by its wallet and by the spender it names.
    const byKind = await call<{ items: Ev[] }>(base, s.key, "GET", `/v1/events?kind=wallet.resource.confirmed`);
    expect(byKind.body.items.map((e) => e.id)).toEqual([made[5]!.id]);
    const wallet = (made[0]!.payload.data.owner as string);
    // The delegation sample's owner is the watched wallet, the delegator.
    expect(made[4]!.payload.data).toMatchObject({ owner: wallet, matchedAddresses: [{ address: wallet, role: "owner" }] });
    const byWallet = await call<{ items: Ev[] }>(base, s.key, "GET", `/v1/events?address=${wallet}&kind=wallet.approval.broadcasted`);
    expect(byWallet.body.items.map((e) => e.id)).toEqual([made[0]!.id]);
    const bySpender = await call<{ items: Ev[] }>(base, s.key, "GET", `/v1/events?address=TKzxdSv2FZKQrEqkKVgp5DcwEXBEKMg2Ax`);
    expect(bySpender.body.items.map((e) => e.id)).toEqual([made[1]!.id, made[0]!.id]);
    // An activity kind that does not exist is unsupported_event, as any unknown kind.
    const unknown = await call<{ error: string; detail: unknown }>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`, { kind: "wallet.approval.failed" });
    expect([unknown.status, unknown.body.error, unknown.body.detail]).toEqual([400, "unsupported_event", { event: "wallet.approval.failed" }]);
    // On a key without mainnet, the key's first chain and that chain's USDT (Nile's is a known token).
    const nile = await setup("/ev-activity-nile", ["tron:nile"]);
    const onNile = await call<Ev>(base, nile.key, "POST", `/v1/subscriptions/${nile.id}/test`, { kind: "wallet.approval.broadcasted" });
    expect(onNile.body.payload.data).toMatchObject({ chainId: "tron:nile", asset: { contract: "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf", symbol: "USDT" } });
  });

  test("Idempotency-Key: the same key replays the same event (one delivery); another body conflicts", async () => {
    const s = await setup("/ev-idem");
    const headers = { "idempotency-key": "test-key-1" };
    const first = await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`, { kind: "service.ping" }, headers);
    const again = await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`, { kind: "service.ping" }, headers);
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    const conflict = await call<{ error: string }>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`, { kind: "wallet.transfer.broadcasted" }, headers);
    expect(conflict.status).toBe(409);
    expect(conflict.body.error).toBe("idempotency_conflict");
    await waitFor(s.key, s.id, first.body.id, (v) => v.status === "delivered");
    await Bun.sleep(200);
    expect(env.receiver.count("/ev-idem")).toBe(1);
    const list = await call<{ items: Ev[] }>(base, s.key, "GET", `/v1/subscriptions/${s.id}/events`);
    expect(list.body.items.length).toBe(1);
  });
});

describe("GET /v1/subscriptions/:id/events", () => {
  test("newest first, limit and page tokens, status filter", async () => {
    const s = await setup("/ev-list");
    env.receiver.setBehaviour("/ev-list", { kind: "ok" });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`)).body.id);
    for (const id of ids) await waitFor(s.key, s.id, id, (v) => v.status === "delivered");
    const seen: string[] = [];
    let token = "";
    let pages = 0;
    do {
      const page = await call<{ items: Ev[]; nextPageToken?: string }>(
        base, s.key, "GET", `/v1/subscriptions/${s.id}/events?limit=2&nextPageToken=${encodeURIComponent(token)}`,
      );
      expect(page.status).toBe(200);
      expect(page.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.items.map((e) => e.id));
      token = page.body.nextPageToken ?? "";
      if (token) expect(token.startsWith("v1:")).toBe(true);
      pages++;
    } while (token);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].reverse());
    const delivered = await call<{ items: Ev[] }>(base, s.key, "GET", `/v1/subscriptions/${s.id}/events?status=delivered`);
    expect(delivered.body.items.length).toBe(5);
    const failed = await call<{ items: Ev[]; nextPageToken?: string }>(base, s.key, "GET", `/v1/subscriptions/${s.id}/events?status=failed`);
    expect(failed.body).toEqual({ items: [] });
  });
});

describe("POST /v1/subscriptions/:id/events/:eventId/retry", () => {
  test("failed → retry → pending, attempts 0 → delivered; Idempotency-Key replays the retry", async () => {
    const s = await setup("/ev-retry");
    env.receiver.setBehaviour("/ev-retry", { kind: "status", status: 500, body: "nope" });
    const e = (await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`)).body;
    const failed = await waitFor(s.key, s.id, e.id, (v) => v.status === "failed");
    expect(failed).toMatchObject({ attempts: 7, deliveryCount: 0, responseStatus: 500, responseBody: "nope" });
    env.receiver.setBehaviour("/ev-retry", { kind: "ok" });
    const headers = { "idempotency-key": "retry-1" };
    const retried = await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/events/${e.id}/retry`, undefined, headers);
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ id: e.id, status: "pending", attempts: 0, deliveryCount: 0 });
    const done = await waitFor(s.key, s.id, e.id, (v) => v.status === "delivered");
    expect(done).toMatchObject({ attempts: 1, deliveryCount: 1, responseStatus: 200 });
    const replay = await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/events/${e.id}/retry`, undefined, headers);
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(retried.body);
    // The replay changed nothing: still delivered once.
    await Bun.sleep(200);
    expect((await call<Ev>(base, s.key, "GET", `/v1/subscriptions/${s.id}/events/${e.id}`)).body.deliveryCount).toBe(1);
    expect(env.receiver.count("/ev-retry")).toBe(8);
  });
});

describe("DELETE /v1/subscriptions/:id", () => {
  test("cancels pending deliveries; the events are gone with it", async () => {
    const s = await setup("/ev-delete");
    env.receiver.setBehaviour("/ev-delete", { kind: "status", status: 503 });
    const e = (await call<Ev>(base, s.key, "POST", `/v1/subscriptions/${s.id}/test`)).body;
    await waitFor(s.key, s.id, e.id, (v) => v.attempts >= 1);
    const del = await call(base, s.key, "DELETE", `/v1/subscriptions/${s.id}`);
    expect(del.status).toBe(204);
    const count = env.receiver.count("/ev-delete");
    expect((await call(base, s.key, "GET", `/v1/subscriptions/${s.id}/events/${e.id}`)).status).toBe(404);
    expect((await call(base, s.key, "GET", `/v1/subscriptions/${s.id}/events`)).status).toBe(404);
    await Bun.sleep(500);
    expect(env.receiver.count("/ev-delete")).toBe(count);
    const [{ n }] = (await env.stack.deliverer!.store.db.$client`SELECT count(*)::int AS n FROM events WHERE subscription_id = ${s.id}`) as [{ n: number }];
    expect(n).toBe(0);
  });
});
