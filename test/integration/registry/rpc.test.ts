// The registry through its RPC layer: a real Connect client over a served port, real PostgreSQL and Redis.
// (The gateway's HTTP face is tested in the gateway's own files.)
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createClient, type Client } from "@connectrpc/connect";
import { SQL } from "bun";
import { ApiKeyService, SubscriptionService } from "../../../gen/webhooks/registry/v1/registry_pb.ts";
import { loadConfig } from "../../../common/config.ts";
import { ApiError, type ErrorCode } from "../../../common/contract/index.ts";
import { fromRpcError } from "../../../common/rpc-errors.ts";
import { setLogSink } from "../../../common/logger.ts";
import { networkTransport } from "../../../common/rpc.ts";
import { serveService, type ServedService } from "../../../common/service.ts";
import { staticResolver } from "../../../common/ssrf.ts";
import { createRegistry, type RegistryHandle } from "../../../registry/index.ts";
import { createTestDatabase, type TestDatabase } from "../../support/db.ts";
import { allocateRedisDb, type TestRedis } from "../../support/redis.ts";
import { rowBinding } from "../../../common/keyring.ts";

const HOST = "hooks.receiver.test";
const URL_OK = `https://${HOST}/webhooks`;
const APP_SECRET = Buffer.alloc(32, 7).toString("base64");
// Presented as is: the legacy root, allowed every method while no per-caller token is configured (these tests play
// the gateway, the deliverer and the operator alike; test/integration/common/internal-auth.test.ts holds each to its list).
const INTERNAL_TOKEN = Buffer.alloc(32, 9).toString("base64");
const asLegacy = { token: INTERNAL_TOKEN };

let database: TestDatabase;
let redisDb: TestRedis;
let registry: RegistryHandle;
let served: ServedService;
let subs: Client<typeof SubscriptionService>;
let keys: Client<typeof ApiKeyService>;
let sql: SQL;
const logLines: string[] = [];
let restoreSink: ((line: string) => void) | undefined;

beforeAll(async () => {
  restoreSink = setLogSink((line) => logLines.push(line));
  database = await createTestDatabase("regrpc");
  redisDb = await allocateRedisDb();
  const config = loadConfig({ DATABASE_URL: database.url, REDIS_URL: redisDb.url, APP_SECRET, INTERNAL_TOKEN });
  registry = await createRegistry(config, {
    resolver: staticResolver({
      [HOST]: ["93.184.216.34"],
      "private.receiver.test": ["10.1.2.3"],
      "broken.receiver.test": new Error("SERVFAIL"),
    }),
  });
  served = await serveService(registry, 0);
  const url = `http://127.0.0.1:${served.http.port}`;
  subs = createClient(SubscriptionService, networkTransport(url, asLegacy));
  keys = createClient(ApiKeyService, networkTransport(url, asLegacy));
  sql = new SQL(database.url, { max: 2 });
});

afterAll(async () => {
  await served?.stop();
  await registry?.close();
  await sql?.close();
  await redisDb?.release();
  await database?.drop();
  if (restoreSink) setLogSink(restoreSink);
});

async function rpcError(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    return fromRpcError(err);
  }
  throw new Error("expected the call to fail");
}

async function expectCode(p: Promise<unknown>, code: ErrorCode, detail?: Record<string, unknown>): Promise<ApiError> {
  const err = await rpcError(p);
  expect(err.code).toBe(code);
  if (detail) expect(err.detail).toEqual(detail);
  return err;
}

async function newKey(chains: string[] = []) {
  const res = await keys.createApiKey({ name: "test", chains });
  return { id: res.key!.id, secret: res.secret };
}

function createReq(keyId: string, over: Record<string, unknown> = {}) {
  return {
    keyId,
    destination: { type: "https", url: URL_OK },
    events: ["wallet.transfer.broadcasted"],
    ...over,
  };
}

async function countRows(table: string, keyId: string): Promise<number> {
  const [row] = await sql.unsafe(`SELECT count(*)::int AS n FROM ${table} WHERE key_id = $1`, [keyId]);
  return (row as { n: number }).n;
}

describe("API keys", () => {
  test("create issues whk_ + 43 base64url chars, stores only its SHA-256, resolves by secret", async () => {
    const res = await keys.createApiKey({ name: "ops", chains: ["tron:nile", "tron:mainnet", "tron:nile"] });
    expect(res.secret).toMatch(/^whk_[A-Za-z0-9_-]{43}$/);
    expect(res.key!.id).toMatch(/^key_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(res.key!.chains).toEqual(["tron:nile", "tron:mainnet"]);
    const [row] = await sql`SELECT secret_hash FROM api_keys WHERE id = ${res.key!.id}`;
    expect((row as { secret_hash: string }).secret_hash).toBe(new Bun.CryptoHasher("sha256").update(res.secret).digest("hex"));
    const all = await sql`SELECT * FROM api_keys`;
    expect(JSON.stringify(all)).not.toContain(res.secret);

    const resolved = await keys.resolveApiKey({ secret: res.secret });
    expect(resolved.valid).toBe(true);
    expect(resolved.key!.id).toBe(res.key!.id);
    expect((await keys.resolveApiKey({ secret: res.secret + "x" })).valid).toBe(false);
    expect((await keys.resolveApiKey({ secret: "whk_" + "A".repeat(43) })).valid).toBe(false);
    expect((await keys.resolveApiKey({ secret: "" })).valid).toBe(false);
  });

  test("empty chains mean all three; unknown chain is invalid_chain", async () => {
    const res = await keys.createApiKey({ name: "", chains: [] });
    expect(res.key!.chains).toEqual(["tron:mainnet", "tron:nile", "tron:shasta"]);
    await expectCode(keys.createApiKey({ name: "x", chains: ["tron:mainnet", "eth:1"] }), "invalid_chain");
  });

  test("revoke makes the key unresolvable and is listed; chains can be changed; unknown ids are not_found", async () => {
    const k = await newKey();
    const changed = await keys.setApiKeyChains({ id: k.id, chains: ["tron:shasta"] });
    expect(changed.key!.chains).toEqual(["tron:shasta"]);
    await expectCode(keys.setApiKeyChains({ id: k.id, chains: [] }), "invalid_request");
    await expectCode(keys.setApiKeyChains({ id: k.id, chains: ["nope"] }), "invalid_chain");
    const revoked = await keys.revokeApiKey({ id: k.id });
    expect(revoked.key!.dateRevokedMs).toBeGreaterThan(0n);
    expect((await keys.resolveApiKey({ secret: k.secret })).valid).toBe(false);
    const again = await keys.revokeApiKey({ id: k.id });
    expect(again.key!.dateRevokedMs).toBe(revoked.key!.dateRevokedMs);
    const listed = (await keys.listApiKeys({})).keys.find((x) => x.id === k.id);
    expect(listed?.dateRevokedMs).toBe(revoked.key!.dateRevokedMs);
    await expectCode(keys.revokeApiKey({ id: "key_01ARZ3NDEKTSV4RRFFQ69G5FAV" }), "not_found");
    await expectCode(keys.revokeApiKey({ id: "nonsense" }), "not_found");
  });
});

describe("subscriptions", () => {
  test("create returns the secret once; get/list never show it; it is stored encrypted", async () => {
    const k = await newKey();
    const res = await subs.createSubscription(createReq(k.id, { description: "main", events: ["service.ping", "wallet.transfer.broadcasted", "service.ping"] }));
    const s = res.subscription!;
    expect(s.id).toMatch(/^sub_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(s.destination!.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(s.destination!.secret.slice(6), "base64").length).toBe(32);
    expect(s.events).toEqual(["service.ping", "wallet.transfer.broadcasted"]);
    expect(s.status).toBe("enabled");
    expect(s.description).toBe("main");
    expect(s.addresses).toEqual([]);
    expect(s.hasMore).toBe(false);
    expect(s.dateCreatedMs).toBe(s.dateUpdatedMs);
    expect(res.idempotency).toBeUndefined();

    const got = (await subs.getSubscription({ keyId: k.id, id: s.id })).subscription!;
    expect(got.destination!.secret).toBe("");
    expect(got.destination!.url).toBe(URL_OK);
    expect(got.dateCreatedMs).toBe(s.dateCreatedMs);
    const listed = await subs.listSubscriptions({ keyId: k.id });
    expect(listed.items.map((i) => i.id)).toEqual([s.id]);
    expect(listed.items[0]!.destination!.secret).toBe("");
    expect(listed.nextPageToken).toBe("");

    const [row] = await sql`SELECT secret FROM subscriptions WHERE id = ${s.id}`;
    const stored = (row as { secret: string }).secret;
    expect(stored).not.toContain(s.destination!.secret);
    expect(stored).not.toContain(s.destination!.secret.slice(6));
    expect(logLines.join("\n")).not.toContain(s.destination!.secret.slice(6));
  });

  test("status disabled is kept; validation errors carry the contract's codes and change nothing", async () => {
    const k = await newKey();
    const disabled = await subs.createSubscription(createReq(k.id, { status: "disabled" }));
    expect(disabled.subscription!.status).toBe("disabled");

    await expectCode(subs.createSubscription(createReq(k.id, { destination: undefined })), "invalid_request", { param: "/destination" });
    await expectCode(subs.createSubscription(createReq(k.id, { destination: { type: "http", url: URL_OK } })), "invalid_request", { param: "/destination/type" });
    for (const url of ["http://hooks.receiver.test/", "not a url", "https://user:pw@hooks.receiver.test/", `https://${HOST}/${"a".repeat(2048)}`, ""]) {
      const err = await expectCode(subs.createSubscription(createReq(k.id, { destination: { type: "https", url } })), "invalid_request");
      expect(err.detail?.param).toBe("/destination/url");
    }
    await expectCode(subs.createSubscription(createReq(k.id, { destination: { type: "https", url: "https://10.0.0.5/x" } })), "ssrf_blocked", { ip: "10.0.0.5", cidr: "10.0.0.0/8" });
    await expectCode(subs.createSubscription(createReq(k.id, { destination: { type: "https", url: "https://private.receiver.test/x" } })), "ssrf_blocked", { ip: "10.1.2.3", cidr: "10.0.0.0/8" });
    await expectCode(subs.createSubscription(createReq(k.id, { destination: { type: "https", url: "https://nowhere.receiver.test/x" } })), "invalid_request", { param: "/destination/url", reason: "does not resolve" });
    await expectCode(subs.createSubscription(createReq(k.id, { destination: { type: "https", url: "https://broken.receiver.test/x" } })), "service_unavailable");
    await expectCode(subs.createSubscription(createReq(k.id, { events: [] })), "invalid_request", { param: "/events" });
    await expectCode(subs.createSubscription(createReq(k.id, { events: ["wallet.transfer.broadcasted", "nope"] })), "unsupported_event", { event: "nope" });
    const lifecycle = ["wallet.transfer.broadcasted", "wallet.transfer.confirmed", "wallet.transfer.failed", "service.ping"];
    expect((await subs.createSubscription(createReq(k.id, { events: lifecycle }))).subscription!.events).toEqual(lifecycle);
    expect((await subs.createSubscription(createReq(k.id, { events: ["wallet.transfer.failed"] }))).subscription!.events).toEqual(["wallet.transfer.failed"]);
    // 17 entries that collapse to 2 are fine; 17 distinct are not.
    const many = Array.from({ length: 17 }, (_, i) => (i % 2 ? "service.ping" : "wallet.transfer.broadcasted"));
    expect((await subs.createSubscription(createReq(k.id, { events: many }))).subscription!.events).toHaveLength(2);
    const distinct = Array.from({ length: 17 }, (_, i) => `kind.${i}`);
    await expectCode(subs.createSubscription(createReq(k.id, { events: distinct })), "invalid_request", { param: "/events" });
    await expectCode(subs.createSubscription(createReq(k.id, { status: "paused" })), "invalid_request", { param: "/status" });
    // 512 code points (astral characters count once) pass, 513 do not.
    const ok = "😀".repeat(512);
    expect((await subs.createSubscription(createReq(k.id, { description: ok }))).subscription!.description).toBe(ok);
    await expectCode(subs.createSubscription(createReq(k.id, { description: "é".repeat(513) })), "description_too_long");

    expect(await countRows("subscriptions", k.id)).toBe(5);
  });

  test("keyset pages newest first, limit rules, tokens scoped to the key", async () => {
    const k = await newKey();
    const other = await newKey();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await subs.createSubscription(createReq(k.id))).subscription!.id);
    const newestFirst = [...ids].reverse();

    const seen: string[] = [];
    let token = "";
    let pages = 0;
    do {
      const page = await subs.listSubscriptions({ keyId: k.id, limit: 3, pageToken: token });
      seen.push(...page.items.map((i) => i.id));
      token = page.nextPageToken;
      if (token) expect(token.startsWith("v1:")).toBe(true);
      // Items created between pages are newer than the cursor: never shown, never shifting the rest.
      if (pages === 0) await subs.createSubscription(createReq(k.id));
      pages++;
    } while (token);
    expect(seen).toEqual(newestFirst);
    expect(pages).toBe(3);

    expect((await subs.listSubscriptions({ keyId: k.id })).items).toHaveLength(8);
    expect((await subs.listSubscriptions({ keyId: k.id, limit: 500 })).items).toHaveLength(8);
    await expectCode(subs.listSubscriptions({ keyId: k.id, limit: -1 }), "invalid_request");

    const first = await subs.listSubscriptions({ keyId: k.id, limit: 2 });
    await expectCode(subs.listSubscriptions({ keyId: other.id, limit: 2, pageToken: first.nextPageToken }), "invalid_pagination_token");
    const tampered = first.nextPageToken.slice(0, -2) + (first.nextPageToken.endsWith("A") ? "BB" : "AA");
    await expectCode(subs.listSubscriptions({ keyId: k.id, pageToken: tampered }), "invalid_pagination_token");
    await expectCode(subs.listSubscriptions({ keyId: k.id, pageToken: "garbage" }), "invalid_pagination_token");
    expect((await subs.listSubscriptions({ keyId: other.id })).items).toEqual([]);
  });

  test("another key's subscription and malformed ids are not_found everywhere", async () => {
    const owner = await newKey();
    const stranger = await newKey();
    const s = (await subs.createSubscription(createReq(owner.id))).subscription!;
    for (const [keyId, id] of [
      [stranger.id, s.id],
      [owner.id, "sub_nope"],
      [owner.id, "evt_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
      [owner.id, "sub_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
    ] as const) {
      await expectCode(subs.getSubscription({ keyId, id }), "not_found");
      await expectCode(subs.updateSubscription({ ...createReq(keyId), id }), "not_found");
      await expectCode(subs.deleteSubscription({ keyId, id }), "not_found");
      await expectCode(subs.rotateSecret({ keyId, id }), "not_found");
    }
    const after = (await subs.getSubscription({ keyId: owner.id, id: s.id })).subscription!;
    expect(after.dateUpdatedMs).toBe(s.dateUpdatedMs);
  });

  test("update replaces the mutable fields and moves dateUpdated; bad input changes nothing", async () => {
    const k = await newKey();
    const s = (await subs.createSubscription(createReq(k.id, { description: "before" }))).subscription!;
    await Bun.sleep(5);
    const updated = (
      await subs.updateSubscription({
        keyId: k.id,
        id: s.id,
        destination: { type: "https", url: `https://${HOST}/v2` },
        events: ["service.ping"],
        status: "disabled",
        description: "",
      })
    ).subscription!;
    expect(updated.destination!.url).toBe(`https://${HOST}/v2`);
    expect(updated.destination!.secret).toBe("");
    expect(updated.events).toEqual(["service.ping"]);
    expect(updated.status).toBe("disabled");
    expect(updated.description).toBe("");
    expect(updated.addresses).toEqual([]);
    expect(updated.dateCreatedMs).toBe(s.dateCreatedMs);
    expect(updated.dateUpdatedMs).toBeGreaterThan(s.dateUpdatedMs);

    // "" status means the default (enabled), as an omitted status on PUT.
    const reset = (await subs.updateSubscription({ ...createReq(k.id), id: s.id })).subscription!;
    expect(reset.status).toBe("enabled");

    await expectCode(subs.updateSubscription({ ...createReq(k.id, { destination: { type: "https", url: "https://127.0.0.1/" } }), id: s.id }), "ssrf_blocked");
    await expectCode(subs.updateSubscription({ ...createReq(k.id, { events: ["x"] }), id: s.id }), "unsupported_event");
    await expectCode(subs.updateSubscription({ ...createReq(k.id, { destination: undefined }), id: s.id }), "invalid_request");
    const unchanged = (await subs.getSubscription({ keyId: k.id, id: s.id })).subscription!;
    expect(unchanged).toEqual(reset);
  });

  test("delete removes the subscription and its addresses; a second delete is not_found", async () => {
    const k = await newKey();
    const s = (await subs.createSubscription(createReq(k.id))).subscription!;
    await sql`INSERT INTO subscription_addresses (subscription_id, chain_id, address) VALUES (${s.id}, 'tron:mainnet', 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t')`;
    await subs.deleteSubscription({ keyId: k.id, id: s.id });
    await expectCode(subs.getSubscription({ keyId: k.id, id: s.id }), "not_found");
    await expectCode(subs.deleteSubscription({ keyId: k.id, id: s.id }), "not_found");
    const [row] = await sql`SELECT count(*)::int AS n FROM subscription_addresses WHERE subscription_id = ${s.id}`;
    expect((row as { n: number }).n).toBe(0);
  });

  test("get inlines up to 200 addresses, oldest first, with hasMore", async () => {
    const k = await newKey();
    const s = (await subs.createSubscription(createReq(k.id))).subscription!;
    await sql`INSERT INTO subscription_addresses (subscription_id, chain_id, address)
              SELECT ${s.id}, 'tron:nile', 'T' || lpad(g::text, 33, '0') FROM generate_series(1, 201) g`;
    const got = (await subs.getSubscription({ keyId: k.id, id: s.id })).subscription!;
    const expected = Array.from({ length: 200 }, (_, i) => ({ chainId: "tron:nile", address: "T" + String(i + 1).padStart(33, "0") }));
    expect(got.addresses.map((a) => ({ chainId: a.chainId, address: a.address }))).toEqual(expected);
    expect(got.hasMore).toBe(true);
    await sql`DELETE FROM subscription_addresses WHERE subscription_id = ${s.id} AND address = ${"T" + "201".padStart(33, "0")}`;
    const exact = (await subs.getSubscription({ keyId: k.id, id: s.id })).subscription!;
    expect(exact.addresses).toHaveLength(200);
    expect(exact.hasMore).toBe(false);
    const listed = (await subs.listSubscriptions({ keyId: k.id })).items[0]!;
    expect(listed.addresses).toEqual([]);
  });
});

describe("secret rotation", () => {
  test("rotation installs a new secret, keeps the previous for the grace, and a rotation during grace drops the older", async () => {
    const k = await newKey(["tron:nile"]);
    const created = (await subs.createSubscription(createReq(k.id))).subscription!;
    const s0 = created.destination!.secret;
    await Bun.sleep(5);

    const r1 = (await subs.rotateSecret({ keyId: k.id, id: created.id })).subscription!;
    const s1 = r1.destination!.secret;
    expect(s1).toMatch(/^whsec_/);
    expect(s1).not.toBe(s0);
    expect(r1.dateUpdatedMs).toBeGreaterThan(created.dateUpdatedMs);
    let [t] = (await subs.getDeliveryTargets({ subscriptionIds: [created.id] })).targets;
    expect(t!.secrets).toEqual([s1, s0]);
    expect(t!.active).toBe(true);
    expect(t!.exists).toBe(true);
    expect(t!.keyId).toBe(k.id);
    expect(t!.chains).toEqual(["tron:nile"]);
    expect(t!.url).toBe(URL_OK);

    const given = "whsec_" + Buffer.alloc(24, 9).toString("base64");
    const r2 = (await subs.rotateSecret({ keyId: k.id, id: created.id, secret: given, gracePeriodSeconds: 600 })).subscription!;
    expect(r2.destination!.secret).toBe(given);
    [t] = (await subs.getDeliveryTargets({ subscriptionIds: [created.id] })).targets;
    expect(t!.secrets).toEqual([given, s1]);

    const r3 = (await subs.rotateSecret({ keyId: k.id, id: created.id, gracePeriodSeconds: 0 })).subscription!;
    [t] = (await subs.getDeliveryTargets({ subscriptionIds: [created.id] })).targets;
    expect(t!.secrets).toEqual([r3.destination!.secret]);

    const got = (await subs.getSubscription({ keyId: k.id, id: created.id })).subscription!;
    expect(got.destination!.secret).toBe("");
    expect(logLines.join("\n")).not.toContain(given.slice(6));
  });

  test("bad grace or secret is invalid_request with its param and changes nothing", async () => {
    const k = await newKey();
    const created = (await subs.createSubscription(createReq(k.id))).subscription!;
    const s0 = created.destination!.secret;
    for (const g of [-1, 604801]) {
      await expectCode(subs.rotateSecret({ keyId: k.id, id: created.id, gracePeriodSeconds: g }), "invalid_request", { param: "/gracePeriodSeconds" });
    }
    expect((await subs.rotateSecret({ keyId: k.id, id: created.id, gracePeriodSeconds: 604800, secret: "whsec_" + Buffer.alloc(64, 1).toString("base64") })).subscription!.destination!.secret).toMatch(/^whsec_/);
    const [before] = (await subs.getDeliveryTargets({ subscriptionIds: [created.id] })).targets;
    expect(before!.secrets[1]).toBe(s0);
    for (const secret of [
      "whsec_" + Buffer.alloc(23).toString("base64"),
      "whsec_" + Buffer.alloc(65).toString("base64"),
      "whsec_not*base64*at*all*but*long*enough*to*count",
      Buffer.alloc(32).toString("base64"),
      "whsec_",
    ]) {
      await expectCode(subs.rotateSecret({ keyId: k.id, id: created.id, secret }), "invalid_request", { param: "/secret" });
    }
    const [after] = (await subs.getDeliveryTargets({ subscriptionIds: [created.id] })).targets;
    expect(after!.secrets).toEqual(before!.secrets);
  });

  test("delivery targets: disabled or revoked is inactive, missing does not exist, order kept", async () => {
    const k = await newKey(["tron:shasta", "tron:nile"]);
    const a = (await subs.createSubscription(createReq(k.id))).subscription!;
    const b = (await subs.createSubscription(createReq(k.id, { status: "disabled" }))).subscription!;
    const missing = "sub_01ARZ3NDEKTSV4RRFFQ69G5FAV";
    let { targets } = await subs.getDeliveryTargets({ subscriptionIds: [b.id, missing, a.id, "junk"] });
    expect(targets.map((t) => [t.subscriptionId, t.exists, t.active])).toEqual([
      [b.id, true, false],
      [missing, false, false],
      [a.id, true, true],
      ["junk", false, false],
    ]);
    expect(targets[2]!.secrets).toEqual([a.destination!.secret]);
    expect(targets[2]!.chains).toEqual(["tron:shasta", "tron:nile"]);
    expect(targets.map((t) => t.holdReason)).toEqual(["subscription_disabled", "", "", ""]);
    await keys.revokeApiKey({ id: k.id });
    ({ targets } = await subs.getDeliveryTargets({ subscriptionIds: [a.id] }));
    expect(targets[0]!.exists).toBe(true);
    expect(targets[0]!.active).toBe(false);
    expect(targets[0]!.holdReason).toBe("key_revoked");
  });

  test("delivery targets: a secret that will not decrypt holds that target alone; a rotation reads again", async () => {
    const k = await newKey();
    const good = (await subs.createSubscription(createReq(k.id))).subscription!;
    const bad = (await subs.createSubscription(createReq(k.id))).subscription!;
    const damage = async (column: "secret" | "previous_secret") => {
      // One character of the sealed body changed: AES-GCM's tag no longer verifies.
      const [row] = (await sql.unsafe(`SELECT ${column} AS v FROM subscriptions WHERE id = $1`, [bad.id])) as { v: string }[];
      const v = row!.v;
      await sql.unsafe(`UPDATE subscriptions SET ${column} = $1 WHERE id = $2`, [v.slice(0, -2) + (v.at(-2) === "A" ? "B" : "A") + v.at(-1), bad.id]);
    };
    await damage("secret");
    let { targets } = await subs.getDeliveryTargets({ subscriptionIds: [bad.id, good.id] });
    expect(targets.map((t) => [t.subscriptionId, t.exists, t.active, t.holdReason, t.secrets])).toEqual([
      [bad.id, true, true, "secret_unreadable", []],
      [good.id, true, true, "", [good.destination!.secret]],
    ]);
    expect(logLines.some((l) => l.includes("delivery target unreadable") && l.includes(bad.id))).toBe(true);

    // Rotated with a grace: the unreadable secret is not kept as the previous one, so the target reads at once.
    const s1 = (await subs.rotateSecret({ keyId: k.id, id: bad.id, gracePeriodSeconds: 600 })).subscription!.destination!.secret;
    ({ targets } = await subs.getDeliveryTargets({ subscriptionIds: [bad.id] }));
    expect(targets.map((t) => [t.holdReason, t.secrets])).toEqual([["", [s1]]]);

    // A previous secret still in its grace that will not decrypt holds the target too (receivers may still verify
    // with it); a rotation without grace drops it.
    const s2 = (await subs.rotateSecret({ keyId: k.id, id: bad.id, gracePeriodSeconds: 600 })).subscription!.destination!.secret;
    await damage("previous_secret");
    ({ targets } = await subs.getDeliveryTargets({ subscriptionIds: [bad.id] }));
    expect(targets.map((t) => [t.holdReason, t.secrets])).toEqual([["secret_unreadable", []]]);
    const s3 = (await subs.rotateSecret({ keyId: k.id, id: bad.id, gracePeriodSeconds: 0 })).subscription!.destination!.secret;
    expect(s3).not.toBe(s2);
    ({ targets } = await subs.getDeliveryTargets({ subscriptionIds: [bad.id] }));
    expect(targets.map((t) => [t.holdReason, t.secrets])).toEqual([["", [s3]]]);
  });
});

describe("idempotency", () => {
  const idem = (key: string, hash: string, requestId: string) => ({ key, requestHash: hash, requestId });

  test("replay returns the stored response (with its secret) and creates nothing; a changed body conflicts", async () => {
    const k = await newKey();
    const first = await subs.createSubscription({ ...createReq(k.id), idempotency: idem("abc", "h1", "req-1") });
    expect(first.idempotency).toBeUndefined();
    const again = await subs.createSubscription({ ...createReq(k.id), idempotency: idem("abc", "h1", "req-2") });
    expect(again.idempotency?.replayed).toBe(true);
    expect(again.idempotency?.originalRequestId).toBe("req-1");
    expect(again.subscription).toEqual(first.subscription);
    expect(again.subscription!.destination!.secret).toMatch(/^whsec_/);
    await expectCode(subs.createSubscription({ ...createReq(k.id), idempotency: idem("abc", "h2", "req-3") }), "idempotency_conflict");
    expect(await countRows("subscriptions", k.id)).toBe(1);

    // Scoped per key: the same Idempotency-Key under another key is a new request.
    const other = await newKey();
    const o = await subs.createSubscription({ ...createReq(other.id), idempotency: idem("abc", "h1", "req-4") });
    expect(o.idempotency).toBeUndefined();
    expect(o.subscription!.id).not.toBe(first.subscription!.id);

    // The stored response is encrypted at rest.
    const rows = await sql`SELECT response FROM idempotency_records WHERE key_id = ${k.id}`;
    expect(rows).toHaveLength(1);
    const sealed = (rows[0] as { response: string }).response;
    expect(sealed).not.toContain(first.subscription!.destination!.secret.slice(6));
    expect(sealed).toStartWith(`v2.${registry.keyring.newest.id}.`);
    const binding = rowBinding("idempotency_records.response", k.id, "POST /v1/subscriptions", "abc");
    expect(Buffer.from(registry.keyring.open(sealed, binding), "base64").toString("latin1")).toContain(first.subscription!.destination!.secret);
  });

  test("an error keeps no record: the key can be reused once the request is fixed", async () => {
    const k = await newKey();
    await expectCode(subs.createSubscription({ ...createReq(k.id, { events: ["bogus"] }), idempotency: idem("fix-me", "bad", "r1") }), "unsupported_event");
    const ok = await subs.createSubscription({ ...createReq(k.id), idempotency: idem("fix-me", "good", "r2") });
    expect(ok.idempotency).toBeUndefined();
    expect(await countRows("idempotency_records", k.id)).toBe(1);
  });

  test("20 concurrent creates with one key: exactly one row; the rest replay it or are in flight", async () => {
    const k = await newKey();
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        subs.createSubscription({ ...createReq(k.id), idempotency: idem("same", "h", `r${i}`) }),
      ),
    );
    expect(await countRows("subscriptions", k.id)).toBe(1);
    const [row] = await sql`SELECT id FROM subscriptions WHERE key_id = ${k.id}`;
    const id = (row as { id: string }).id;
    let fresh = 0;
    let replayed = 0;
    let inFlight = 0;
    for (const r of results) {
      if (r.status === "fulfilled") {
        expect(r.value.subscription!.id).toBe(id);
        if (r.value.idempotency?.replayed) replayed++;
        else fresh++;
      } else {
        expect(fromRpcError(r.reason).code).toBe("idempotency_in_flight");
        inFlight++;
      }
    }
    expect(fresh).toBe(1);
    expect(fresh + replayed + inFlight).toBe(20);
    // Once the first finished, the same request replays it.
    const later = await subs.createSubscription({ ...createReq(k.id), idempotency: idem("same", "h", "late") });
    expect(later.idempotency?.replayed).toBe(true);
    expect(later.subscription!.id).toBe(id);
  });

  test("rotate is idempotent per subscription path: replay returns the same secret and rotates once", async () => {
    const k = await newKey();
    const a = (await subs.createSubscription(createReq(k.id))).subscription!;
    const b = (await subs.createSubscription(createReq(k.id))).subscription!;
    const r1 = await subs.rotateSecret({ keyId: k.id, id: a.id, idempotency: idem("rot", "h", "q1") });
    const r2 = await subs.rotateSecret({ keyId: k.id, id: a.id, idempotency: idem("rot", "h", "q2") });
    expect(r2.idempotency?.replayed).toBe(true);
    expect(r2.idempotency?.originalRequestId).toBe("q1");
    expect(r2.subscription!.destination!.secret).toBe(r1.subscription!.destination!.secret);
    const [t] = (await subs.getDeliveryTargets({ subscriptionIds: [a.id] })).targets;
    expect(t!.secrets).toEqual([r1.subscription!.destination!.secret, a.destination!.secret]);
    // Same key on another subscription's path is another scope.
    const rb = await subs.rotateSecret({ keyId: k.id, id: b.id, idempotency: idem("rot", "h", "q3") });
    expect(rb.idempotency).toBeUndefined();
  });

  test("expired records are purged and no longer replay", async () => {
    const k = await newKey();
    const first = await subs.createSubscription({ ...createReq(k.id), idempotency: idem("old", "h", "x1") });
    await sql`UPDATE idempotency_records SET expires_at = now() - interval '1 second' WHERE key_id = ${k.id}`;
    const second = await subs.createSubscription({ ...createReq(k.id), idempotency: idem("old", "h", "x2") });
    expect(second.idempotency).toBeUndefined();
    expect(second.subscription!.id).not.toBe(first.subscription!.id);
    await sql`UPDATE idempotency_records SET expires_at = now() - interval '1 second' WHERE key_id = ${k.id}`;
    expect(await registry.store.purgeExpiredIdempotency()).toBeGreaterThanOrEqual(1);
    expect(await countRows("idempotency_records", k.id)).toBe(0);
  });
});

describe("operational endpoints", () => {
  test("/healthz, /readyz and /metrics answer", async () => {
    const base = `http://127.0.0.1:${served.http.port}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ready", checks: { postgres: true }, informational: { redis: true } });
    const text = await (await fetch(`${base}/metrics`)).text();
    // Earlier tests made calls, replays and errors: each shows up by method and outcome.
    expect(text).toMatch(/registry_rpc_calls_total\{method="createSubscription",outcome="ok"\} [1-9]/);
    expect(text).toMatch(/registry_rpc_calls_total\{method="getSubscription",outcome="not_found"\} [1-9]/);
    expect(text).toMatch(/registry_idempotent_replays_total [1-9]/);
    expect(text).toContain("registry_rpc_duration_seconds_bucket");
  });
});

// A TCP proxy between a second registry and the real PostgreSQL, so the database can be "cut" without touching
// the shared server. `refuse`: every connection closed, nothing listening. `blackhole`: connections accepted but
// never answered. `freeze`: the open connections stay up but carry no more bytes (a dead network path, no reset).
// `restore`: forwarding again on the same port (frozen connections are reset, as TCP eventually would).
async function startPgProxy() {
  const net = await import("node:net");
  type Socket = import("node:net").Socket;
  const sockets = new Set<Socket>();
  let mode: "forward" | "blackhole" | "freeze" = "forward";
  const track = (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => {});
  };
  const server = net.createServer((client) => {
    track(client);
    if (mode !== "forward") return;
    const upstream = net.connect(5432, "127.0.0.1");
    track(upstream);
    client.on("data", (d) => mode === "forward" && upstream.write(d));
    upstream.on("data", (d) => mode === "forward" && client.write(d));
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve((server.address() as { port: number }).port));
    });
  const port = await listen(0);
  const resetAll = () => {
    for (const s of sockets) s.destroy();
    sockets.clear();
  };
  return {
    port,
    async refuse() {
      resetAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    blackhole() {
      mode = "blackhole";
      resetAll();
    },
    freeze() {
      mode = "freeze";
    },
    async restore() {
      if (mode === "freeze") resetAll();
      mode = "forward";
      if (!server.listening) await listen(port);
    },
    async close() {
      resetAll();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("database outage", () => {
  test("a cut database answers service_unavailable within 5 s, changes nothing, and recovers without a restart", async () => {
    const proxy = await startPgProxy();
    const url = new URL(database.url);
    url.port = String(proxy.port);
    const config = loadConfig({ DATABASE_URL: url.toString(), REDIS_URL: redisDb.url, APP_SECRET, INTERNAL_TOKEN });
    const cut = await createRegistry(config, { resolver: staticResolver({ [HOST]: ["93.184.216.34"] }) });
    const servedCut = await serveService(cut, 0);
    try {
      const s2 = createClient(SubscriptionService, networkTransport(`http://127.0.0.1:${servedCut.http.port}`, asLegacy));
      const k = await newKey();
      const s = (await s2.createSubscription(createReq(k.id))).subscription!;
      const calls = {
        get: () => s2.getSubscription({ keyId: k.id, id: s.id }),
        list: () => s2.listSubscriptions({ keyId: k.id }),
        create: () => s2.createSubscription({ ...createReq(k.id), idempotency: { key: "down", requestHash: "h", requestId: "r" } }),
        rotate: () => s2.rotateSecret({ keyId: k.id, id: s.id }),
        delete: () => s2.deleteSubscription({ keyId: k.id, id: s.id }),
      };

      for (const [outage, names] of [
        ["refuse", ["get", "list", "create", "rotate", "delete"]],
        ["blackhole", ["get", "create"]],
        ["freeze", ["get", "create"]],
      ] as const) {
        if (outage === "refuse") await proxy.refuse();
        else if (outage === "blackhole") proxy.blackhole();
        else proxy.freeze();
        for (const name of names) {
          const started = performance.now();
          await expectCode(calls[name](), "service_unavailable");
          expect(performance.now() - started).toBeLessThan(5_000);
        }
        if (outage === "refuse") {
          const ready = await fetch(`http://127.0.0.1:${servedCut.http.port}/readyz`);
          expect(ready.status).toBe(503);
        }

        await proxy.restore();
        // Recovers without a restart: a bounded wait for the pool to reconnect.
        let got: Awaited<ReturnType<typeof calls.get>> | undefined;
        for (let i = 0; i < 50 && !got; i++) {
          got = await calls.get().catch(() => undefined);
          if (!got) await Bun.sleep(100);
        }
        expect(got?.subscription?.dateUpdatedMs).toBe(s.dateUpdatedMs);
      }
      // Nothing was changed while the database was away.
      expect(await countRows("subscriptions", k.id)).toBe(1);
      expect(await countRows("idempotency_records", k.id)).toBe(0);
      expect((await fetch(`http://127.0.0.1:${servedCut.http.port}/readyz`)).status).toBe(200);
      expect(await (await fetch(`http://127.0.0.1:${servedCut.http.port}/metrics`)).text()).toMatch(
        /registry_database_unavailable_total [1-9]/,
      );
    } finally {
      await servedCut.stop();
      await cut.close();
      await proxy.close();
    }
  }, 60_000);
});
