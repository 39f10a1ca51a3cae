// OWASP API5:2023 Broken Function Level Authorization. Proves: the public API has no administrative function (key
// management, brokers, watch-index rebuilds, enqueueing events, the internal RPC paths) behind any path, with or
// without a valid key; on the internal RPC ports each caller's credential reaches only the methods its allow-list
// names (the gateway's cannot mint or revoke keys, enqueue events or read delivery targets; an API key is no
// credential at all), and a refused call changes nothing. Mechanisms: the gateway mounts only gateway/routes (no
// RPC router on the public port); common/internal-auth.ts (per-caller tokens, METHOD_CALLERS allow-list, checked on
// every served port and in process).
// Deeper: test/integration/common/internal-auth.test.ts (every caller, gRPC and mTLS, per-method allow-list coverage,
// start-up refusals), gateway-split.test.ts, brokers-cli.test.ts, keys-cli.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { callerToken } from "../../common/internal-auth.ts";
import { DeliveryService } from "../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { ApiKeyService, SubscriptionService, WatchIndexService } from "../../gen/webhooks/registry/v1/registry_pb.ts";
import { startStack, type Stack, type TestKey } from "../support/stack.ts";

let stack: Stack;
let key: TestKey;
let subId: string;

beforeAll(async () => {
  stack = await startStack({ deliverer: { startWorker: false } });
  key = await stack.createKey();
  const res = await fetch(`${stack.baseUrl}/v1/subscriptions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
    body: JSON.stringify({ destination: { type: "https", url: "https://hooks.example.com/fa" }, events: ["service.ping"] }),
  });
  expect(res.status).toBe(201);
  subId = ((await res.json()) as { id: string }).id;
}, 60_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

async function count(table: string): Promise<number> {
  const sql = new SQL(stack.database.url, { max: 1 });
  try {
    const [row] = await sql.unsafe(`SELECT count(*)::int AS n FROM ${table}`);
    return (row as { n: number }).n;
  } finally {
    await sql.close();
  }
}

const RPC = (service: { typeName: string }, method: string) => `/${service.typeName}/${method}`;

describe("the public port serves no administrative function", () => {
  const ADMIN_PATHS = [
    "/v1/keys", "/v1/api-keys", "/v1/apikeys", "/v1/brokers", "/v1/admin", "/v1/watch-index/rebuild", "/v1/operator",
    "/v1/internal", "/v1/events/enqueue", "/admin", "/internal", "/keys", "/brokers",
    RPC(ApiKeyService, "CreateApiKey"), RPC(ApiKeyService, "RevokeApiKey"), RPC(ApiKeyService, "ListApiKeys"),
    RPC(WatchIndexService, "RebuildWatchIndex"), RPC(DeliveryService, "Enqueue"), RPC(SubscriptionService, "GetDeliveryTargets"),
  ];

  test("every administrative path is 404 not_found with a valid key (401 under /v1 without one), changing nothing", async () => {
    const keys = await count("api_keys");
    const events = await count("events");
    for (const path of ADMIN_PATHS) {
      for (const method of ["GET", "POST"]) {
        const authed = await fetch(stack.baseUrl + path, {
          method,
          headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
          body: method === "POST" ? JSON.stringify({ name: "x", id: key.id, events: [{ subscriptionId: subId, kind: "service.ping" }] }) : undefined,
        });
        const body = (await authed.json()) as { error: string };
        expect(`${method} ${path} ${authed.status} ${body.error}`).toBe(`${method} ${path} 404 not_found`);
        if (path.startsWith("/v1/")) {
          const anonymous = await fetch(stack.baseUrl + path, { method });
          expect(`${method} ${path} ${anonymous.status}`).toBe(`${method} ${path} 401`);
        }
      }
    }
    expect(await count("api_keys")).toBe(keys);
    expect(await count("events")).toBe(events);
  });
});

describe("internal RPC ports: each credential reaches only its own methods", () => {
  const connect = (port: number, service: { typeName: string }, method: string, body: unknown, bearer?: string) =>
    fetch(`http://127.0.0.1:${port}${RPC(service, method)}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
      body: JSON.stringify(body),
    });
  const code = async (res: Response) => `${res.status} ${res.status === 200 ? "ok" : ((await res.json()) as { code: string }).code}`;

  test("the gateway's credential: key management, enqueue, targets and rebuilds are permission_denied; its own methods are served", async () => {
    const gateway = callerToken(stack.config, "gateway")!;
    const reg = stack.config.registryPort;
    const del = stack.config.delivererPort;
    const keys = await count("api_keys");
    const events = await count("events");
    for (const method of ["CreateApiKey", "ListApiKeys", "RevokeApiKey", "SetApiKeyChains"]) {
      expect(`${method} ${await code(await connect(reg, ApiKeyService, method, { id: key.id, name: "x" }, gateway))}`).toBe(`${method} 403 permission_denied`);
    }
    expect(await code(await connect(reg, WatchIndexService, "RebuildWatchIndex", {}, gateway))).toBe("403 permission_denied");
    expect(await code(await connect(reg, SubscriptionService, "GetDeliveryTargets", { subscriptionIds: [subId] }, gateway))).toBe("403 permission_denied");
    expect(await code(await connect(del, DeliveryService, "Enqueue", { events: [{ subscriptionId: subId, kind: "service.ping" }] }, gateway))).toBe("403 permission_denied");
    expect(await count("api_keys")).toBe(keys);
    expect(await count("events")).toBe(events);
    // The control: what the public API needs is served to it.
    expect(await code(await connect(reg, SubscriptionService, "GetSubscription", { keyId: key.id, id: subId }, gateway))).toBe("200 ok");
  });

  test("the matcher's credential may only enqueue; the deliverer's may not mint keys", async () => {
    const matcher = callerToken(stack.config, "matcher")!;
    const deliverer = callerToken(stack.config, "deliverer")!;
    const reg = stack.config.registryPort;
    expect(await code(await connect(reg, SubscriptionService, "GetSubscription", { keyId: key.id, id: subId }, matcher))).toBe("403 permission_denied");
    expect(await code(await connect(reg, ApiKeyService, "CreateApiKey", { name: "x" }, matcher))).toBe("403 permission_denied");
    expect(await code(await connect(reg, ApiKeyService, "CreateApiKey", { name: "x" }, deliverer))).toBe("403 permission_denied");
  });

  test("no credential, a public API key or a made-up token is unauthenticated on both ports", async () => {
    const keys = await count("api_keys");
    for (const bearer of [undefined, key.key, "not-a-token"]) {
      expect(await code(await connect(stack.config.registryPort, ApiKeyService, "CreateApiKey", { name: "x" }, bearer))).toBe("401 unauthenticated");
      expect(await code(await connect(stack.config.delivererPort, DeliveryService, "GetHealth", { keyId: key.id, subscriptionId: subId }, bearer))).toBe("401 unauthenticated");
    }
    expect(await count("api_keys")).toBe(keys);
  });
});
