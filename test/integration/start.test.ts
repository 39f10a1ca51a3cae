// `npm start` as an operator runs it: one real process (gateway, registry, deliverer, matcher) against a database
// that does not exist yet (it is created), answering the API, then stopping cleanly on SIGTERM.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { join } from "node:path";
import { allocateRedisDb, type TestRedis } from "../support/redis.ts";

const ROOT = join(import.meta.dir, "..", "..");
const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const DB_NAME = `webhooks_start_${process.pid}_${Date.now().toString(36)}`;

let redisDb: TestRedis;
let env: Record<string, string>;

beforeAll(async () => {
  redisDb = await allocateRedisDb();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${DB_NAME}`;
  env = {
    ...(process.env as Record<string, string>),
    DATABASE_URL: url.toString(),
    REDIS_URL: redisDb.url,
    REDIS_PREFIX: "start-test:",
    APP_SECRET: "",
    PORT: "0",
    REGISTRY_PORT: "0",
    REGISTRY_GRPC_PORT: "0",
    DELIVERER_PORT: "0",
    DELIVERER_GRPC_PORT: "0",
    MATCHER_PORT: "0",
    // No TRON node here: the matcher keeps retrying a closed local port, which must not disturb the API.
    TRON_MAINNET_NODE_URL: "http://127.0.0.1:1",
    TRON_NILE_NODE_URL: "http://127.0.0.1:1",
    TRON_SHASTA_NODE_URL: "http://127.0.0.1:1",
  };
});

afterAll(async () => {
  const admin = new SQL(ADMIN_URL, { max: 1 });
  try {
    await admin.unsafe(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`);
  } finally {
    await admin.close();
  }
  await redisDb?.release();
});

async function databaseExists(): Promise<boolean> {
  const admin = new SQL(ADMIN_URL, { max: 1 });
  try {
    return (await admin`SELECT 1 FROM pg_database WHERE datname = ${DB_NAME}`).length === 1;
  } finally {
    await admin.close();
  }
}

test("npm start creates the database, serves the API with every service, and stops on SIGTERM", async () => {
  expect(await databaseExists()).toBe(false);
  const proc = Bun.spawn([process.execPath, join(ROOT, "cli", "start.ts")], { env, stdout: "pipe", stderr: "pipe", cwd: ROOT });
  const lines: string[] = [];
  const stderr = new Response(proc.stderr).text();
  const reader = (async () => {
    const decoder = new TextDecoder();
    let pending = "";
    for await (const chunk of proc.stdout) {
      pending += decoder.decode(chunk, { stream: true });
      const parts = pending.split("\n");
      pending = parts.pop() ?? "";
      lines.push(...parts);
    }
  })();
  try {
    let port: number | undefined;
    for (let i = 0; i < 300 && port === undefined && proc.exitCode === null; i++) {
      const line = lines.find((l) => l.includes('"gateway listening"'));
      if (line) port = (JSON.parse(line) as { port: number }).port;
      else await Bun.sleep(100);
    }
    expect(port, `start did not come up:\n${lines.join("\n")}\n${proc.exitCode === null ? "" : await stderr}`).toBeGreaterThan(0);
    for (const service of ["registry", "deliverer", "matcher"]) expect(lines.some((l) => l.includes(`"${service} listening"`))).toBe(true);
    expect(await databaseExists()).toBe(true);
    const base = `http://127.0.0.1:${port}`;

    const ready = await fetch(`${base}/readyz`);
    const readiness = (await ready.json()) as Record<string, unknown>;
    expect(ready.status).toBe(200);
    expect(readiness).toEqual({ status: "ready", checks: { registry: true }, informational: { redis: true, deliverer: true } });

    const issued = Bun.spawnSync([process.execPath, join(ROOT, "cli", "keys.ts"), "create", "--name", "start test"], { env, cwd: ROOT });
    expect(issued.exitCode).toBe(0);
    const key = issued.stdout.toString().trim().split("\n").at(-1)!;
    const created = await fetch(`${base}/v1/subscriptions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ destination: { type: "https", url: "https://93.184.216.34/hook" }, events: ["service.ping"] }),
    });
    expect(created.status).toBe(201);
    expect((await fetch(`${base}/docs`)).status).toBe(200);

    proc.kill("SIGTERM");
    const code = await Promise.race([proc.exited, Bun.sleep(15_000).then(() => "timeout" as const)]);
    expect(code).toBe(0);
    expect(lines.some((l) => l.includes('"stopping"'))).toBe(true);
  } finally {
    if (proc.exitCode === null) proc.kill("SIGKILL");
    await proc.exited;
    await reader.catch(() => {});
  }
}, 60_000);
