// Internal credentials on every served RPC: the registry and the deliverer, over Connect (plain fetch, as curl would)
// and over real gRPC (@grpc/grpc-js). No credential or a wrong one is Unauthenticated (HTTP 401 / gRPC status 16),
// changes nothing and is logged at warn with the peer address (never the token); a known caller is held to each
// method's allow-list (PermissionDenied, HTTP 403 / gRPC 7), on a port and in process alike. Health, readiness and
// metrics stay open; a method listed in a handle's publicMethods skips the check; on an mTLS gRPC port a verified client
// certificate naming a caller is its credential; a service run alone refuses to start without its credentials.
import { BackfillService } from "../../../gen/webhooks/registry/v1/backfill_pb.ts";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { toJson, type DescService } from "@bufbuild/protobuf";
import { loadConfig } from "../../../common/config.ts";
import {
  acceptedCallers,
  bearerToken,
  callerToken,
  derivedToken,
  METHOD_CALLERS,
} from "../../../common/internal-auth.ts";
import { INTERNAL_CALLERS } from "../../../common/internal-callers.ts";
import { inProcessTransport, networkTransport } from "../../../common/rpc.ts";
import { setLogSink } from "../../../common/logger.ts";
import { serveService, type ServedService } from "../../../common/service.ts";
import {
  DeliveryService,
  EnqueueRequestSchema,
  EnqueueResponseSchema,
  TransferSchema,
} from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import {
  ApiKeyService,
  CreateApiKeyRequestSchema,
  CreateApiKeyResponseSchema,
  ResolveApiKeyRequestSchema,
  ResolveApiKeyResponseSchema,
  SubscriptionService,
  WatchIndexService,
} from "../../../gen/webhooks/registry/v1/registry_pb.ts";
import { issueLeaf } from "../../../tools/receiver/certs.ts";
import { sampleTransfer, startDeliveryBed, type DeliveryBed } from "../../support/delivery.ts";
import { grpcClient, grpcUnary } from "../../support/grpc.ts";

const REPO = join(import.meta.dir, "..", "..", "..");
const WRONG = "x".repeat(43);

let bed: DeliveryBed;
let registry: ServedService;
let deliverer: ServedService;
const logs: string[] = [];
let restoreSink: ((line: string) => void) | undefined;

/** The bed's INTERNAL_TOKEN: with no per-caller token configured, accepted as the legacy caller (every method). */
let ROOT: string;

beforeAll(async () => {
  bed = await startDeliveryBed({ delivererDeps: { startWorker: false } });
  ROOT = bed.config.internalToken!;
  registry = await serveService(bed.registry, 0, 0);
  deliverer = await serveService(bed.deliverer!, 0, 0);
  restoreSink = setLogSink((line) => logs.push(line));
}, 60_000);

afterAll(async () => {
  if (restoreSink) setLogSink(restoreSink);
  await deliverer?.stop();
  await registry?.stop();
  await bed?.stop();
}, 60_000);

async function count(table: "api_keys" | "events"): Promise<number> {
  const [row] = await bed.sql.unsafe(`SELECT count(*)::int AS n FROM ${table}`);
  return (row as { n: number }).n;
}

/** A Connect unary call in JSON, as curl would make it. */
function connectCall(served: ServedService, path: string, body: unknown, authorization?: string): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (authorization !== undefined) headers.authorization = authorization;
  return fetch(`http://127.0.0.1:${served.http.port}/${path}`, { method: "POST", headers, body: JSON.stringify(body) });
}

async function expectRefusedOverConnect(res: Response): Promise<void> {
  expect(res.status).toBe(401);
  expect(((await res.json()) as { code: string }).code).toBe("unauthenticated");
}

function refusalLogs(): Array<Record<string, unknown>> {
  return logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((r) => r.msg === "internal rpc refused");
}

describe("registry", () => {
  const path = `${ApiKeyService.typeName}/CreateApiKey`;

  test("Connect: no credential and a wrong one are refused and create nothing; the legacy root is served", async () => {
    const before = await count("api_keys");
    logs.length = 0;
    await expectRefusedOverConnect(await connectCall(registry, path, { name: "x" }));
    await expectRefusedOverConnect(await connectCall(registry, path, { name: "x" }, `Bearer ${WRONG}`));
    await expectRefusedOverConnect(await connectCall(registry, path, { name: "x" }, ROOT));
    expect(await count("api_keys")).toBe(before);

    const refusals = refusalLogs();
    expect(refusals.map((r) => r.reason)).toEqual(["no credential", "wrong credential", "no credential"]);
    for (const r of refusals) {
      expect(r.level).toBe("warn");
      expect(r.method).toBe(path);
      expect(r.peer).toBe("127.0.0.1");
    }
    expect(logs.join("\n")).not.toContain(WRONG);

    const served = await connectCall(registry, path, { name: "x" }, `Bearer ${ROOT}`);
    expect(served.status).toBe(200);
    expect(((await served.json()) as { secret: string }).secret).toMatch(/^whk_/);
    expect(await count("api_keys")).toBe(before + 1);
  });

  test("gRPC: no credential and a wrong one are status 16 and create nothing; the right one is served", async () => {
    const client = grpcClient(registry.grpc!);
    try {
      const before = await count("api_keys");
      const schemas = { input: CreateApiKeyRequestSchema, output: CreateApiKeyResponseSchema };
      for (const token of [undefined, WRONG]) {
        const err = (await grpcUnary(client, ApiKeyService, "CreateApiKey", schemas, { name: "g" }, token).catch((e: unknown) => e)) as grpc.ServiceError;
        expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
      }
      expect(await count("api_keys")).toBe(before);
      logs.length = 0;
      await grpcUnary(client, ApiKeyService, "CreateApiKey", schemas, { name: "g" }, undefined).catch(() => {});
      expect(refusalLogs()[0]?.peer).toMatch(/127\.0\.0\.1$/);

      const issued = await grpcUnary(client, ApiKeyService, "CreateApiKey", schemas, { name: "g" }, ROOT);
      expect(issued.secret).toMatch(/^whk_/);
      expect(await count("api_keys")).toBe(before + 1);
    } finally {
      client.close();
    }
  });
});

describe("deliverer", () => {
  const path = `${DeliveryService.typeName}/Enqueue`;
  let body: unknown;
  beforeAll(async () => {
    const sub = await bed.subscribe("/auth");
    body = { events: [{ subscriptionId: sub.subscriptionId, kind: "wallet.transfer.broadcasted", transfer: toJson(TransferSchema, sampleTransfer(1)) }] };
  });

  test("Connect: no credential and a wrong one are refused and enqueue nothing; the right one is served", async () => {
    const before = await count("events");
    await expectRefusedOverConnect(await connectCall(deliverer, path, body));
    await expectRefusedOverConnect(await connectCall(deliverer, path, body, `Bearer ${WRONG}`));
    expect(await count("events")).toBe(before);
    const served = await connectCall(deliverer, path, body, `Bearer ${ROOT}`);
    expect(served.status).toBe(200);
    expect(((await served.json()) as { created: number }).created).toBe(1);
    expect(await count("events")).toBe(before + 1);
  });

  test("gRPC: no credential and a wrong one are status 16 and enqueue nothing; the right one is served", async () => {
    const client = grpcClient(deliverer.grpc!);
    try {
      const sub = await bed.subscribe("/auth-grpc");
      const message = { events: [{ subscriptionId: sub.subscriptionId, kind: "wallet.transfer.broadcasted", transfer: sampleTransfer(2) }] };
      const schemas = { input: EnqueueRequestSchema, output: EnqueueResponseSchema };
      const before = await count("events");
      for (const token of [undefined, WRONG]) {
        const err = (await grpcUnary(client, DeliveryService, "Enqueue", schemas, message, token).catch((e: unknown) => e)) as grpc.ServiceError;
        expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
      }
      expect(await count("events")).toBe(before);
      const res = await grpcUnary(client, DeliveryService, "Enqueue", schemas, message, ROOT);
      expect(res.created).toBe(1);
      expect(await count("events")).toBe(before + 1);
    } finally {
      client.close();
    }
  });
});

test("health, readiness and metrics stay open on both services", async () => {
  for (const served of [registry, deliverer]) {
    for (const path of ["/healthz", "/readyz", "/metrics"]) {
      const res = await fetch(`http://127.0.0.1:${served.http.port}${path}`);
      expect(res.status, path).toBe(200);
    }
  }
});

test("a method in publicMethods is served without the token; every other method still requires it", async () => {
  const open = await serveService({ ...bed.registry, publicMethods: [ApiKeyService.method.resolveApiKey] }, 0, 0);
  const client = grpcClient(open.grpc!);
  try {
    const resolved = await connectCall(open, `${ApiKeyService.typeName}/ResolveApiKey`, { secret: "whk_nothing" });
    expect(resolved.status).toBe(200);
    expect(((await resolved.json()) as { valid?: boolean }).valid ?? false).toBe(false);
    const schemas = { input: ResolveApiKeyRequestSchema, output: ResolveApiKeyResponseSchema };
    expect((await grpcUnary(client, ApiKeyService, "ResolveApiKey", schemas, { secret: "whk_nothing" }, undefined)).valid).toBe(false);
    await expectRefusedOverConnect(await connectCall(open, `${ApiKeyService.typeName}/CreateApiKey`, { name: "x" }));
  } finally {
    client.close();
    await open.stop();
  }
});

test("mTLS on the gRPC port: a client certificate naming a caller is its credential; others are refused or cannot connect", async () => {
  const pki = bed.pki;
  const mtls = await serveService(bed.registry, 0, 0, { grpcTls: { cert: pki.cert, key: pki.key, clientCa: pki.caPem } });
  const port = (mtls.grpc!.address() as { port: number }).port;
  const schemas = { input: CreateApiKeyRequestSchema, output: CreateApiKeyResponseSchema };
  const clients: grpc.Client[] = [];
  const client = (creds: grpc.ChannelCredentials) => {
    // The certificate names localhost; grpc-js will not send an IP address as the TLS server name.
    const c = new grpc.Client(`127.0.0.1:${port}`, creds, { "grpc.ssl_target_name_override": "localhost" });
    clients.push(c);
    return c;
  };
  const create = (c: grpc.Client) => grpcUnary(c, ApiKeyService, "CreateApiKey", schemas, { name: "mtls" }, undefined);
  const codeOf = async (c: grpc.Client) => ((await create(c).catch((e: unknown) => e)) as grpc.ServiceError).code;
  try {
    const ca = Buffer.from(pki.caPem);
    const withLeaf = (leaf: { cert: string; key: string }) => client(grpc.credentials.createSsl(ca, Buffer.from(leaf.key), Buffer.from(leaf.cert)));
    expect((await create(withLeaf(issueLeaf(pki, "operator")))).secret).toMatch(/^whk_/);

    const before = await count("api_keys");
    // Verified, but naming a caller not allowed to mint keys, or no caller at all (CN=localhost).
    expect(await codeOf(withLeaf(issueLeaf(pki, "gateway")))).toBe(grpc.status.PERMISSION_DENIED);
    expect(await codeOf(withLeaf({ cert: pki.cert, key: pki.key }))).toBe(grpc.status.UNAUTHENTICATED);
    const rogue = client(grpc.credentials.createSsl(ca, Buffer.from(pki.untrustedKey), Buffer.from(pki.untrustedCert)));
    const anonymous = client(grpc.credentials.createSsl(ca));
    const cleartext = client(grpc.credentials.createInsecure());
    for (const c of [rogue, anonymous, cleartext]) expect(await codeOf(c)).toBe(grpc.status.UNAVAILABLE);
    expect(await count("api_keys")).toBe(before);
    // The Connect port is not the gRPC port: it still requires a token.
    await expectRefusedOverConnect(await connectCall(mtls, `${ApiKeyService.typeName}/CreateApiKey`, { name: "x" }));
  } finally {
    for (const c of clients) c.close();
    await mtls.stop();
  }
});

describe("per-caller credentials and allow-lists", () => {
  const token = () => randomBytes(32).toString("base64url");
  const tokens = { gateway: token(), matcher: token(), deliverer: token(), operator: token() };
  const digest = (t: string) => createHash("sha256").update(t).digest("hex");
  // The deliverer is given only the gateway's and the matcher's digests, as the manifests do: it cannot present them.
  const registryConfig = loadConfig({
    INTERNAL_TOKEN_GATEWAY: tokens.gateway,
    INTERNAL_TOKEN_DELIVERER: tokens.deliverer,
    INTERNAL_TOKEN_OPERATOR: tokens.operator,
    INTERNAL_TOKEN_MATCHER_SHA256: digest(tokens.matcher),
  });
  const delivererConfig = loadConfig({ INTERNAL_TOKEN_GATEWAY_SHA256: digest(tokens.gateway), INTERNAL_TOKEN_MATCHER_SHA256: digest(tokens.matcher) });
  let reg: ServedService;
  let del: ServedService;
  beforeAll(async () => {
    reg = await serveService({ ...bed.registry, callers: acceptedCallers(registryConfig, undefined) }, 0, 0);
    del = await serveService({ ...bed.deliverer!, callers: acceptedCallers(delivererConfig, undefined) }, 0, 0);
  });
  afterAll(async () => {
    await reg?.stop();
    await del?.stop();
  });

  const serverOf = (service: DescService) => (service.typeName === DeliveryService.typeName ? del : reg);
  const call = (service: DescService, method: string, body: unknown, bearer?: string) =>
    connectCall(serverOf(service), `${service.typeName}/${method}`, body, bearer === undefined ? undefined : `Bearer ${bearer}`);
  async function expectDenied(res: Response, what: string): Promise<void> {
    expect(res.status, what).toBe(403);
    expect(((await res.json()) as { code: string }).code, what).toBe("permission_denied");
  }

  test("the gateway's credential: Enqueue, GetDeliveryTargets, key management and rebuilds are PermissionDenied, changing nothing", async () => {
    const sub = await bed.subscribe("/gateway-denied");
    const enqueue = { events: [{ subscriptionId: sub.subscriptionId, kind: "wallet.transfer.broadcasted", transfer: toJson(TransferSchema, sampleTransfer(9)) }] };
    const events = await count("events");
    const keys = await count("api_keys");
    logs.length = 0;
    await expectDenied(await call(DeliveryService, "Enqueue", enqueue, tokens.gateway), "Enqueue");
    await expectDenied(await call(SubscriptionService, "GetDeliveryTargets", { subscriptionIds: [sub.subscriptionId] }, tokens.gateway), "GetDeliveryTargets");
    for (const method of ["CreateApiKey", "ListApiKeys", "RevokeApiKey", "SetApiKeyChains"]) {
      await expectDenied(await call(ApiKeyService, method, { id: sub.keyId, name: "x" }, tokens.gateway), method);
    }
    await expectDenied(await call(WatchIndexService, "RebuildWatchIndex", {}, tokens.gateway), "RebuildWatchIndex");
    expect(await count("events")).toBe(events);
    expect(await count("api_keys")).toBe(keys);
    const refusal = refusalLogs()[0]!;
    expect([refusal.level, refusal.caller, refusal.reason]).toEqual(["warn", "gateway", "caller not allowed"]);
    expect(logs.join("\n")).not.toContain(tokens.gateway);

    // What the public API needs is served.
    const got = await call(SubscriptionService, "GetSubscription", { keyId: sub.keyId, id: sub.subscriptionId }, tokens.gateway);
    expect(got.status).toBe(200);
    const health = await call(DeliveryService, "GetHealth", { keyId: sub.keyId, subscriptionId: sub.subscriptionId }, tokens.gateway);
    expect(health.status).toBe(200);
  });

  test("the matcher's credential is refused every method but Enqueue", async () => {
    const sub = await bed.subscribe("/matcher-only");
    const enqueue = { events: [{ subscriptionId: sub.subscriptionId, kind: "wallet.transfer.broadcasted", transfer: toJson(TransferSchema, sampleTransfer(10)) }] };
    const served = await call(DeliveryService, "Enqueue", enqueue, tokens.matcher);
    expect(served.status).toBe(200);
    expect(((await served.json()) as { created: number }).created).toBe(1);
    let checked = 0;
    for (const service of [SubscriptionService, ApiKeyService, WatchIndexService, BackfillService, DeliveryService] as DescService[]) {
      for (const method of service.methods) {
        if (method.name === "Enqueue" || method.methodKind !== "unary") continue;
        await expectDenied(await call(service, method.name, {}, tokens.matcher), method.name);
        checked++;
      }
    }
    expect(checked).toBe(Object.keys(METHOD_CALLERS).length - 2);
  });

  test("the operator mints keys; the deliverer reads targets; no credential, a wrong one or the root are Unauthenticated", async () => {
    const minted = await call(ApiKeyService, "CreateApiKey", { name: "op" }, tokens.operator);
    expect(minted.status).toBe(200);
    const sub = await bed.subscribe("/targets");
    const targets = await call(SubscriptionService, "GetDeliveryTargets", { subscriptionIds: [sub.subscriptionId] }, tokens.deliverer);
    expect(targets.status).toBe(200);
    // Per-caller tokens retire the root.
    for (const bearer of [undefined, WRONG, ROOT]) {
      await expectRefusedOverConnect(await call(ApiKeyService, "CreateApiKey", { name: "x" }, bearer));
    }
    // The deliverer knows the gateway only by its digest: the digest itself is no credential.
    await expectRefusedOverConnect(await call(DeliveryService, "GetHealth", {}, digest(tokens.gateway)));
  });

  test("gRPC: a known caller outside the allow-list is status 7", async () => {
    const client = grpcClient(del.grpc!);
    try {
      const schemas = { input: EnqueueRequestSchema, output: EnqueueResponseSchema };
      const err = (await grpcUnary(client, DeliveryService, "Enqueue", schemas, { events: [] }, tokens.gateway).catch((e: unknown) => e)) as grpc.ServiceError;
      expect(err.code).toBe(grpc.status.PERMISSION_DENIED);
      expect((await grpcUnary(client, DeliveryService, "Enqueue", schemas, { events: [] }, tokens.matcher)).created).toBe(0);
    } finally {
      client.close();
    }
  });

  test("in process, each transport's caller is held to the same allow-list", async () => {
    const asGateway = createClient(DeliveryService, inProcessTransport(bed.deliverer!.routes, "gateway"));
    const denied = await asGateway.enqueue({ events: [] }).catch((e: unknown) => ConnectError.from(e));
    expect((denied as ConnectError).code).toBe(Code.PermissionDenied);
    const keysAsGateway = createClient(ApiKeyService, inProcessTransport(bed.registry.routes, "gateway"));
    expect(((await keysAsGateway.createApiKey({ name: "x" }).catch((e: unknown) => e)) as ConnectError).code).toBe(Code.PermissionDenied);
    const asMatcher = createClient(DeliveryService, inProcessTransport(bed.deliverer!.routes, "matcher"));
    expect((await asMatcher.enqueue({ events: [] })).created).toBe(0);
    expect(((await asMatcher.getHealth({}).catch((e: unknown) => e)) as ConnectError).code).toBe(Code.PermissionDenied);
  });
});

test("every RPC of every service has an allow-list entry, and nothing else does", () => {
  const methods = [SubscriptionService, ApiKeyService, WatchIndexService, BackfillService, DeliveryService].flatMap((s: DescService) => s.methods.map((m) => `${s.typeName}/${m.name}`));
  expect(Object.keys(METHOD_CALLERS).sort()).toEqual(methods.sort());
});

test("tokens: each caller's is derived from the root unless its own variable is set; the root is legacy only without them", () => {
  const root = "r".repeat(32);
  const alone = acceptedCallers(loadConfig({}), root);
  expect(alone.legacy).toBeDefined();
  expect([...alone.digests.keys()].sort()).toEqual([...INTERNAL_CALLERS].sort());
  const own = "g".repeat(32);
  const mixed = loadConfig({ INTERNAL_TOKEN: root, INTERNAL_TOKEN_GATEWAY: own });
  expect(callerToken(mixed, "gateway")).toBe(own);
  expect(callerToken(mixed, "matcher")).toBe(derivedToken(root, "matcher"));
  expect(derivedToken(root, "matcher")).not.toBe(derivedToken(root, "gateway"));
  expect(acceptedCallers(mixed, root).legacy).toBeUndefined();
  expect(() => loadConfig({ INTERNAL_TOKEN_MATCHER: "short" })).toThrow(/INTERNAL_TOKEN_MATCHER must be at least 32 bytes/);
  expect(() => loadConfig({ INTERNAL_TOKEN_MATCHER_SHA256: "abc" })).toThrow(/64 hex digits/);
});

test("internal hops over TLS: the Connect port serves HTTPS, a client trusting the CA calls it, one that does not cannot", async () => {
  const pki = bed.pki;
  const https = await serveService(bed.registry, 0, undefined, { httpTls: { cert: pki.cert, key: pki.key } });
  try {
    const url = `https://localhost:${https.http.port}`;
    const keys = (ca?: string) => createClient(ApiKeyService, networkTransport(url, { token: derivedToken(ROOT, "gateway"), ca }));
    expect((await keys(pki.caPem).resolveApiKey({ secret: "whk_nothing" })).valid).toBe(false);
    expect(((await keys().resolveApiKey({ secret: "whk_nothing" }).catch((e: unknown) => e)) as ConnectError).code).toBe(Code.Unavailable);
    // Cleartext to the TLS port does not get an answer either.
    expect(await fetch(`http://127.0.0.1:${https.http.port}/healthz`).then((r) => r.status, () => "refused")).not.toBe(200);
  } finally {
    await https.stop();
  }
});

test("the HTTPS files go together", () => {
  expect(() => loadConfig({ INTERNAL_TLS_CERT_FILE: "/c.pem" })).toThrow(/set both or neither/);
  expect(loadConfig({ INTERNAL_TLS_CERT_FILE: "/c.pem", INTERNAL_TLS_KEY_FILE: "/k.pem", INTERNAL_TLS_CA_FILE: "/ca.pem" })).toMatchObject({
    internalTls: { certFile: "/c.pem", keyFile: "/k.pem" },
    internalTlsCaFile: "/ca.pem",
  });
});

test("a handle with RPCs and no callers is never served", async () => {
  const { callers: _, ...tokenless } = bed.registry;
  await expect(serveService(tokenless, 0)).rejects.toThrow(/callers/);
});

test("npm start serves a service's RPC ports only when asked; listeners bind loopback unless BIND_HOST says otherwise", () => {
  const none = loadConfig({});
  expect(none.internalRpc).toEqual({ registry: false, deliverer: false });
  expect(none.bindHost).toBe("127.0.0.1");
  expect(loadConfig({ INTERNAL_RPC: "1" }).internalRpc).toEqual({ registry: true, deliverer: true });
  expect(loadConfig({ REGISTRY_GRPC_PORT: "50051" }).internalRpc).toEqual({ registry: true, deliverer: false });
  expect(loadConfig({ DELIVERER_PORT: "3002" }).internalRpc).toEqual({ registry: false, deliverer: true });
  expect(loadConfig({ BIND_HOST: "0.0.0.0" }).bindHost).toBe("0.0.0.0");
  expect(loadConfig({ INTERNAL_TOKEN: "a".repeat(32) }).internalToken).toBe("a".repeat(32));
  expect(() => loadConfig({ INTERNAL_TOKEN: "a".repeat(31) })).toThrow(/at least 32 bytes/);
});

test("the mTLS files go together", () => {
  expect(() => loadConfig({ GRPC_TLS_CERT_FILE: "/c.pem" })).toThrow(/set all three or none/);
  expect(loadConfig({ GRPC_TLS_CERT_FILE: "/c.pem", GRPC_TLS_KEY_FILE: "/k.pem", GRPC_TLS_CLIENT_CA_FILE: "/ca.pem" }).grpcTls).toEqual({
    certFile: "/c.pem",
    keyFile: "/k.pem",
    clientCaFile: "/ca.pem",
  });
});

test("the Authorization header is read as a bearer token and nothing else", () => {
  expect(bearerToken(`Bearer ${WRONG}`)).toBe(WRONG);
  expect(bearerToken(`bearer  ${WRONG}`)).toBe(WRONG);
  expect(bearerToken(null)).toBeUndefined();
  expect(bearerToken("Bearer")).toBeUndefined();
  expect(bearerToken(`Basic ${WRONG}`)).toBeUndefined();
  expect(bearerToken(`Bearer a b`)).toBeUndefined();
});

describe("a service run alone", () => {
  const env = (extra: Record<string, string>) => {
    const rest = Object.fromEntries(Object.entries(process.env as Record<string, string>).filter(([k]) => !k.startsWith("INTERNAL_TOKEN")));
    // An unreachable database: a service that got past the token check would hang or fail there instead.
    return { ...rest, DATABASE_URL: "postgres://postgres@127.0.0.1:1/none", LOG_LEVEL: "warn", ...extra };
  };

  const run = (service: string, extra: Record<string, string>) =>
    Bun.spawnSync([process.execPath, join(REPO, service, "main.ts")], { cwd: REPO, env: env(extra), timeout: 20_000 });

  for (const service of ["registry", "deliverer", "matcher", "gateway"]) {
    test(`${service} refuses to start without its credentials, naming them in one line`, () => {
      const alone = run(service, {});
      expect(alone.exitCode).toBe(1);
      const stderr = alone.stderr.toString().trim();
      expect(stderr.split("\n")).toHaveLength(1);
      expect(stderr).toStartWith(`${service} cannot start: set INTERNAL_TOKEN_`);
      expect(stderr).toEndWith("or INTERNAL_TOKEN");
    });
  }

  test("a server must recognise every caller it serves: the registry without the deliverer's names it", () => {
    const partial = run("registry", { INTERNAL_TOKEN_GATEWAY: "g".repeat(32) });
    expect(partial.exitCode).toBe(1);
    expect(partial.stderr.toString()).toContain("set INTERNAL_TOKEN_DELIVERER (or INTERNAL_TOKEN_DELIVERER_SHA256) or INTERNAL_TOKEN");
  });

  test("a configured token shorter than 32 bytes is refused at start", () => {
    const run = Bun.spawnSync([process.execPath, join(REPO, "registry", "main.ts")], { cwd: REPO, env: env({ INTERNAL_TOKEN: "short" }), timeout: 20_000 });
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr.toString()).toContain("INTERNAL_TOKEN must be at least 32 bytes");
  });
});
