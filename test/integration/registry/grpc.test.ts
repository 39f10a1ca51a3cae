// A real gRPC client (@grpc/grpc-js over HTTP/2, no Connect code on the client side) calls the registry's gRPC
// port: what other platform services speaking plain gRPC would do. Messages are encoded with the generated schemas.
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as grpc from "@grpc/grpc-js";
import type { DescMessage, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import {
  ApiKeyService,
  CreateApiKeyRequestSchema,
  CreateApiKeyResponseSchema,
  CreateSubscriptionRequestSchema,
  GetSubscriptionRequestSchema,
  ListSubscriptionsRequestSchema,
  ListSubscriptionsResponseSchema,
  ResolveApiKeyRequestSchema,
  ResolveApiKeyResponseSchema,
  SubscriptionResponseSchema,
  SubscriptionService,
} from "../../../gen/webhooks/registry/v1/registry_pb.ts";
import { loadConfig } from "../../../common/config.ts";
import { fromRpcError } from "../../../common/rpc-errors.ts";
import { type ApiError } from "../../../common/contract/index.ts";
import { serveService, type ServedService } from "../../../common/service.ts";
import { staticResolver } from "../../../common/ssrf.ts";
import { createRegistry, type RegistryHandle } from "../../../registry/index.ts";
import { grpcClient, grpcUnary } from "../../support/grpc.ts";
import { createTestDatabase, type TestDatabase } from "../../support/db.ts";
import { allocateRedisDb, type TestRedis } from "../../support/redis.ts";

// Presented as is: the legacy root, allowed every method while no per-caller token is configured.
const INTERNAL_TOKEN = Buffer.alloc(32, 9).toString("base64");

let database: TestDatabase;
let redisDb: TestRedis;
let registry: RegistryHandle;
let served: ServedService;
let client: grpc.Client;

beforeAll(async () => {
  database = await createTestDatabase("reggrpc");
  redisDb = await allocateRedisDb();
  const config = loadConfig({ DATABASE_URL: database.url, REDIS_URL: redisDb.url, APP_SECRET: Buffer.alloc(32, 3).toString("base64"), INTERNAL_TOKEN });
  registry = await createRegistry(config, { resolver: staticResolver({ "hooks.receiver.test": ["93.184.216.34"] }) });
  served = await serveService(registry, 0, 0);
  client = grpcClient(served.grpc!);
});

afterAll(async () => {
  client?.close();
  await served?.stop();
  await registry?.close();
  await redisDb?.release();
  await database?.drop();
});

/** One unary call the way any gRPC client makes it: /package.Service/Method over HTTP/2, protobuf bodies. */
function call<I extends DescMessage, O extends DescMessage>(
  service: { typeName: string },
  method: string,
  input: I,
  output: O,
  message: MessageInitShape<I>,
): Promise<MessageShape<O>> {
  return grpcUnary(client, service, method, { input, output }, message, INTERNAL_TOKEN);
}

/** The ErrorInfo the registry attached, read from the standard grpc-status-details-bin trailer. */
function errorInfo(err: grpc.ServiceError): ApiError {
  const headers = new Headers();
  headers.set("grpc-status", String(err.code));
  headers.set("grpc-message", encodeURIComponent(err.details));
  for (const value of err.metadata.get("grpc-status-details-bin")) {
    headers.set("grpc-status-details-bin", Buffer.from(value as Buffer).toString("base64"));
  }
  return fromRpcError(findTrailerError(headers));
}

test("a plain gRPC client creates a key, resolves it, creates, gets and lists a subscription", async () => {
  const issued = await call(ApiKeyService, "CreateApiKey", CreateApiKeyRequestSchema, CreateApiKeyResponseSchema, {
    name: "grpc",
    chains: ["tron:mainnet"],
  });
  expect(issued.secret).toMatch(/^whk_/);
  const resolved = await call(ApiKeyService, "ResolveApiKey", ResolveApiKeyRequestSchema, ResolveApiKeyResponseSchema, {
    secret: issued.secret,
  });
  expect(resolved.valid).toBe(true);
  expect(resolved.key!.chains).toEqual(["tron:mainnet"]);

  const keyId = issued.key!.id;
  const created = await call(SubscriptionService, "CreateSubscription", CreateSubscriptionRequestSchema, SubscriptionResponseSchema, {
    keyId,
    destination: { type: "https", url: "https://hooks.receiver.test/in" },
    events: ["service.ping"],
    description: "over grpc",
  });
  expect(created.subscription!.id).toMatch(/^sub_/);
  expect(created.subscription!.destination!.secret).toMatch(/^whsec_/);

  const got = await call(SubscriptionService, "GetSubscription", GetSubscriptionRequestSchema, SubscriptionResponseSchema, {
    keyId,
    id: created.subscription!.id,
  });
  expect(got.subscription!.description).toBe("over grpc");
  expect(got.subscription!.destination!.secret).toBe("");

  const listed = await call(SubscriptionService, "ListSubscriptions", ListSubscriptionsRequestSchema, ListSubscriptionsResponseSchema, {
    keyId,
  });
  expect(listed.items.map((s) => s.id)).toEqual([created.subscription!.id]);
});

test("an error reaches a gRPC client with its status and the ErrorInfo detail", async () => {
  const issued = await call(ApiKeyService, "CreateApiKey", CreateApiKeyRequestSchema, CreateApiKeyResponseSchema, { name: "e" });
  const keyId = issued.key!.id;

  const missing = await call(SubscriptionService, "GetSubscription", GetSubscriptionRequestSchema, SubscriptionResponseSchema, {
    keyId,
    id: "sub_01ARZ3NDEKTSV4RRFFQ69G5FAV",
  }).then(
    () => undefined,
    (e: grpc.ServiceError) => e,
  );
  expect(missing?.code).toBe(grpc.status.NOT_FOUND);
  expect(errorInfo(missing!).code).toBe("not_found");

  const blocked = await call(SubscriptionService, "CreateSubscription", CreateSubscriptionRequestSchema, SubscriptionResponseSchema, {
    keyId,
    destination: { type: "https", url: "https://[::ffff:10.0.0.5]/x" },
    events: ["service.ping"],
  }).then(
    () => undefined,
    (e: grpc.ServiceError) => e,
  );
  expect(blocked?.code).toBe(grpc.status.INVALID_ARGUMENT);
  const info = errorInfo(blocked!);
  expect(info.code).toBe("ssrf_blocked");
  expect(info.detail).toEqual({ ip: "10.0.0.5", cidr: "10.0.0.0/8" });
});
