// The internal token on every served RPC: the registry and the deliverer, over Connect (plain fetch, as curl would)
// and over real gRPC (@grpc/grpc-js). No credential or a wrong one is Unauthenticated (HTTP 401 / gRPC status 16),
// changes nothing and is logged at warn with the peer address (never the token); the right one is served. Health,
// readiness and metrics stay open; a method listed in a handle's publicMethods skips the check; on an mTLS gRPC port a
// verified client certificate is the credential; a service run alone refuses to start without INTERNAL_TOKEN.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { toJson } from "@bufbuild/protobuf";
import { loadConfig } from "../../common/config.ts";
import { bearerToken } from "../../common/internal-auth.ts";
import { setLogSink } from "../../common/logger.ts";
import { serveService, type ServedService } from "../../common/service.ts";
import {
  DeliveryService,
  EnqueueRequestSchema,
  EnqueueResponseSchema,
  TransferSchema,
} from "../../gen/webhooks/delivery/v1/delivery_pb.ts";
import {
  ApiKeyService,
  CreateApiKeyRequestSchema,
  CreateApiKeyResponseSchema,
  ResolveApiKeyRequestSchema,
  ResolveApiKeyResponseSchema,
} from "../../gen/webhooks/registry/v1/registry_pb.ts";
import { sampleTransfer, startDeliveryBed, type DeliveryBed } from "../support/delivery.ts";
import { grpcClient, grpcUnary } from "../support/grpc.ts";

const ROOT = join(import.meta.dir, "..", "..");
const WRONG = "x".repeat(43);

let bed: DeliveryBed;
let registry: ServedService;
let deliverer: ServedService;
const logs: string[] = [];
let restoreSink: ((line: string) => void) | undefined;

beforeAll(async () => {
  bed = await startDeliveryBed({ delivererDeps: { startWorker: false } });
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

  test("Connect: no credential and a wrong one are refused and create nothing; the right one is served", async () => {
    const before = await count("api_keys");
    logs.length = 0;
    await expectRefusedOverConnect(await connectCall(registry, path, { name: "x" }));
    await expectRefusedOverConnect(await connectCall(registry, path, { name: "x" }, `Bearer ${WRONG}`));
    await expectRefusedOverConnect(await connectCall(registry, path, { name: "x" }, bed.registry.internalToken));
    expect(await count("api_keys")).toBe(before);

    const refusals = refusalLogs();
    expect(refusals.map((r) => r.reason)).toEqual(["no credential", "wrong credential", "no credential"]);
    for (const r of refusals) {
      expect(r.level).toBe("warn");
      expect(r.method).toBe(path);
      expect(r.peer).toBe("127.0.0.1");
    }
    expect(logs.join("\n")).not.toContain(WRONG);

    const served = await connectCall(registry, path, { name: "x" }, `Bearer ${bed.registry.internalToken}`);
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

      const issued = await grpcUnary(client, ApiKeyService, "CreateApiKey", schemas, { name: "g" }, bed.registry.internalToken);
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
    const served = await connectCall(deliverer, path, body, `Bearer ${bed.deliverer!.internalToken}`);
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
      const res = await grpcUnary(client, DeliveryService, "Enqueue", schemas, message, bed.deliverer!.internalToken);
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

test("mTLS on the gRPC port: a client certificate from the configured CA is the credential; others cannot connect", async () => {
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
  try {
    const ca = Buffer.from(pki.caPem);
    const trusted = client(grpc.credentials.createSsl(ca, Buffer.from(pki.key), Buffer.from(pki.cert)));
    expect((await grpcUnary(trusted, ApiKeyService, "CreateApiKey", schemas, { name: "mtls" }, undefined)).secret).toMatch(/^whk_/);

    const before = await count("api_keys");
    const rogue = client(grpc.credentials.createSsl(ca, Buffer.from(pki.untrustedKey), Buffer.from(pki.untrustedCert)));
    const anonymous = client(grpc.credentials.createSsl(ca));
    const cleartext = client(grpc.credentials.createInsecure());
    for (const c of [rogue, anonymous, cleartext]) {
      const err = (await grpcUnary(c, ApiKeyService, "CreateApiKey", schemas, { name: "x" }, undefined).catch((e: unknown) => e)) as grpc.ServiceError;
      expect(err.code).toBe(grpc.status.UNAVAILABLE);
    }
    expect(await count("api_keys")).toBe(before);
    // The Connect port is not the gRPC port: it still requires the token.
    await expectRefusedOverConnect(await connectCall(mtls, `${ApiKeyService.typeName}/CreateApiKey`, { name: "x" }));
  } finally {
    for (const c of clients) c.close();
    await mtls.stop();
  }
});

test("a handle with RPCs and no token is never served", async () => {
  const { internalToken: _, ...tokenless } = bed.registry;
  await expect(serveService(tokenless, 0)).rejects.toThrow(/internalToken/);
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
    const { INTERNAL_TOKEN: _, ...rest } = process.env as Record<string, string>;
    // An unreachable database: a service that got past the token check would hang or fail there instead.
    return { ...rest, DATABASE_URL: "postgres://postgres@127.0.0.1:1/none", LOG_LEVEL: "warn", ...extra };
  };

  for (const service of ["registry", "deliverer", "matcher", "gateway"]) {
    test(`${service} refuses to start without INTERNAL_TOKEN, naming it in one line`, () => {
      const run = Bun.spawnSync([process.execPath, join(ROOT, service, "main.ts")], { cwd: ROOT, env: env({}), timeout: 20_000 });
      expect(run.exitCode).toBe(1);
      const stderr = run.stderr.toString().trim();
      expect(stderr.split("\n")).toHaveLength(1);
      expect(stderr).toContain(`${service} cannot start: set INTERNAL_TOKEN`);
    });
  }

  test("a configured token shorter than 32 bytes is refused at start", () => {
    const run = Bun.spawnSync([process.execPath, join(ROOT, "registry", "main.ts")], { cwd: ROOT, env: env({ INTERNAL_TOKEN: "short" }), timeout: 20_000 });
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr.toString()).toContain("INTERNAL_TOKEN must be at least 32 bytes");
  });
});
