// Readiness that does not cascade: each service is ready when it can do its own job. A dependency it rides out is
// shown under `informational`, never a reason for 503, so one service's outage does not take every pod of every
// other service out of rotation.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { loadConfig, type Config } from "../../../common/config.ts";
import { setLogSink } from "../../../common/logger.ts";
import { inProcessTransport, networkTransport } from "../../../common/rpc.ts";
import { serveService, type ServedService, type ServiceHandle } from "../../../common/service.ts";
import { createDeliverer } from "../../../deliverer/index.ts";
import { createGatewayApp } from "../../../gateway/app.ts";
import { createRegistry, type RegistryHandle } from "../../../registry/index.ts";
import { createTestDatabase, type TestDatabase } from "../../support/db.ts";
import { freePorts } from "../../support/ports.ts";
import { allocateRedisDb, type TestRedis } from "../../support/redis.ts";

let database: TestDatabase;
let redisDb: TestRedis;
let config: Config;
let registry: RegistryHandle;
let deadUrl: string;
const cleanups: (() => Promise<unknown> | unknown)[] = [];
let restoreSink: ((line: string) => void) | undefined;

beforeAll(async () => {
  // Connection errors of the deliberately broken dependencies are expected here.
  restoreSink = setLogSink(() => {});
  database = await createTestDatabase("ready");
  redisDb = await allocateRedisDb();
  config = loadConfig({ DATABASE_URL: database.url, REDIS_URL: redisDb.url, APP_SECRET: randomBytes(32).toString("base64") });
  registry = await createRegistry(config);
  // Nothing listens there (a port just found free).
  deadUrl = `http://127.0.0.1:${freePorts(1)[0]}`;
});

afterAll(async () => {
  for (const fn of cleanups.reverse()) await fn();
  await registry?.close();
  await redisDb?.release();
  await database?.drop();
  if (restoreSink) setLogSink(restoreSink);
});

async function served(handle: ServiceHandle): Promise<string> {
  const s: ServedService = await serveService(handle, 0);
  cleanups.push(() => s.stop());
  return `http://127.0.0.1:${s.http.port}`;
}

async function readyz(base: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${base}/readyz`);
  return { status: res.status, body: await res.json() };
}

describe("readiness per service", () => {
  test("registry: ready on PostgreSQL alone; a Redis it cannot reach is shown", async () => {
    const noRedis = await createRegistry({ ...config, redisUrl: "redis://127.0.0.1:1" });
    cleanups.push(() => noRedis.close());
    noRedis.redis.on("error", () => {});
    expect(await readyz(await served(noRedis))).toEqual({
      status: 200,
      body: { status: "ready", checks: { postgres: true }, informational: { redis: false } },
    });
  });

  test("deliverer: stays ready while the registry is unreachable", async () => {
    const deliverer = await createDeliverer(config, { registry: networkTransport(deadUrl, { token: undefined, timeoutMs: 1_000 }), startWorker: false });
    cleanups.push(() => deliverer.close());
    expect(await readyz(await served(deliverer))).toEqual({
      status: 200,
      body: { status: "ready", checks: { postgres: true, redis: true }, informational: { registry: false } },
    });
  });

  test("gateway: ready while authentication reaches PostgreSQL through the registry, whatever else is down", async () => {
    const gateway = createGatewayApp({
      config: { ...config, redisUrl: "redis://127.0.0.1:1" },
      registry: inProcessTransport(registry.routes),
      deliverer: networkTransport(deadUrl, { token: undefined, timeoutMs: 1_000 }),
    });
    gateway.listen({ port: 0, hostname: "127.0.0.1" });
    cleanups.push(() => gateway.stop(true));
    expect(await readyz(`http://127.0.0.1:${gateway.server!.port}`)).toEqual({
      status: 200,
      body: { status: "ready", checks: { registry: true }, informational: { redis: false, deliverer: false } },
    });
  });

  test("gateway: unready when the registry cannot be reached", async () => {
    const gateway = createGatewayApp({ config, registry: networkTransport(deadUrl, { token: undefined, timeoutMs: 1_000 }) });
    gateway.listen({ port: 0, hostname: "127.0.0.1" });
    cleanups.push(() => gateway.stop(true));
    expect(await readyz(`http://127.0.0.1:${gateway.server!.port}`)).toEqual({
      status: 503,
      body: { status: "not_ready", checks: { registry: false }, informational: { redis: true } },
    });
  });
});
