// The services as separate processes, as in Kubernetes: `bun run registry`, `bun run deliverer` and
// `bun run gateway` talking over the network (REGISTRY_URL, DELIVERER_URL). The API works end to end; when the
// registry process goes away the gateway answers 503 service_unavailable quickly and /readyz says so.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { createTestDatabase, type TestDatabase } from "../../support/db.ts";
import { allocateRedisDb, type TestRedis } from "../../support/redis.ts";
import { freePorts } from "../../support/ports.ts";

const ROOT = join(import.meta.dir, "..", "..", "..");

let database: TestDatabase;
let redisDb: TestRedis;
const procs: Subprocess[] = [];

beforeAll(async () => {
  database = await createTestDatabase("split");
  redisDb = await allocateRedisDb();
});

afterAll(async () => {
  for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
  await Promise.all(procs.map((p) => p.exited));
  await redisDb?.release();
  await database?.drop();
});

function spawn(script: string, env: Record<string, string>): Subprocess {
  const proc = Bun.spawn([process.execPath, join(ROOT, script)], { env, cwd: ROOT, stdout: "ignore", stderr: "ignore" });
  procs.push(proc);
  return proc;
}

async function waitFor(url: string, status: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "no answer";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      last = `${res.status} ${await res.text()}`;
      if (res.status === status) return;
    } catch (err) {
      last = String(err);
    }
    await Bun.sleep(100);
  }
  throw new Error(`${url} never answered ${status}; last: ${last}`);
}

test("gateway, registry and deliverer as separate processes; the registry going away is a fast 503", async () => {
  const [gatewayPort, registryPort, registryGrpc, delivererPort, delivererGrpc] = freePorts(5) as [number, number, number, number, number];
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    DATABASE_URL: database.url,
    REDIS_URL: redisDb.url,
    REDIS_PREFIX: "split-test:",
    APP_SECRET: Buffer.alloc(32, 3).toString("base64"),
    PORT: String(gatewayPort),
    REGISTRY_PORT: String(registryPort),
    REGISTRY_GRPC_PORT: String(registryGrpc),
    DELIVERER_PORT: String(delivererPort),
    DELIVERER_GRPC_PORT: String(delivererGrpc),
    REGISTRY_URL: `http://127.0.0.1:${registryPort}`,
    DELIVERER_URL: `http://127.0.0.1:${delivererPort}`,
  };
  // Each process holds its own internal token; the servers know their callers by digest only, as in the manifests.
  const { INTERNAL_TOKEN: _root, ...base_ } = env;
  const token = (n: number) => Buffer.alloc(32, n).toString("base64");
  const digest = (t: string) => createHash("sha256").update(t).digest("hex");
  const tokens = { gateway: token(5), deliverer: token(6) };
  const registry = spawn("registry/main.ts", {
    ...base_,
    INTERNAL_TOKEN_GATEWAY_SHA256: digest(tokens.gateway),
    INTERNAL_TOKEN_DELIVERER_SHA256: digest(tokens.deliverer),
  });
  await waitFor(`http://127.0.0.1:${registryPort}/readyz`, 200);
  spawn("deliverer/main.ts", {
    ...base_,
    INTERNAL_TOKEN_DELIVERER: tokens.deliverer,
    INTERNAL_TOKEN_GATEWAY_SHA256: digest(tokens.gateway),
    INTERNAL_TOKEN_MATCHER_SHA256: digest(token(8)),
  });
  // The gateway is ready without the deliverer (it only shows it): wait for it, so the readiness below is complete.
  await waitFor(`http://127.0.0.1:${delivererPort}/readyz`, 200);
  const gateway = spawn("gateway/main.ts", { ...base_, INTERNAL_TOKEN_GATEWAY: tokens.gateway });
  const base = `http://127.0.0.1:${gatewayPort}`;
  await waitFor(`${base}/readyz`, 200);
  const readiness = (await (await fetch(`${base}/readyz`)).json()) as Record<string, unknown>;
  expect(readiness).toEqual({ status: "ready", checks: { registry: true }, informational: { redis: true, deliverer: true } });

  const issued = Bun.spawnSync([process.execPath, join(ROOT, "cli", "keys.ts"), "create", "--name", "split"], { env, cwd: ROOT });
  expect(issued.exitCode).toBe(0);
  const headers = { authorization: `Bearer ${issued.stdout.toString().trim().split("\n").at(-1)}`, "content-type": "application/json" };

  const created = await fetch(`${base}/v1/subscriptions`, {
    method: "POST",
    headers,
    body: JSON.stringify({ destination: { type: "https", url: "https://93.184.216.34/hook" }, events: ["service.ping"] }),
  });
  expect(created.status).toBe(201);
  const { id } = (await created.json()) as { id: string };
  expect((await fetch(`${base}/v1/subscriptions/${id}`, { headers })).status).toBe(200);
  const missing = await fetch(`${base}/v1/subscriptions/sub_01HZZZZZZZZZZZZZZZZZZZZZZZ`, { headers });
  expect(missing.status).toBe(404);
  expect(((await missing.json()) as { error: string }).error).toBe("not_found");

  registry.kill("SIGTERM");
  expect(await registry.exited).toBe(0);
  const started = performance.now();
  const down = await fetch(`${base}/v1/subscriptions/${id}`, { headers });
  expect(performance.now() - started).toBeLessThan(5_000);
  expect(down.status).toBe(503);
  expect(((await down.json()) as { error: string }).error).toBe("service_unavailable");
  await waitFor(`${base}/readyz`, 503, 5_000);
  // The deliverer rides the registry's outage out: it stays in rotation and says what it misses.
  const deliverer = await fetch(`http://127.0.0.1:${delivererPort}/readyz`);
  expect(deliverer.status).toBe(200);
  expect(await deliverer.json()).toMatchObject({ status: "ready", informational: { registry: false } });

  gateway.kill("SIGTERM");
  expect(await gateway.exited).toBe(0);
}, 90_000);
