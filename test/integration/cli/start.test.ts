// `npm start` as an operator runs it: one real process (gateway, registry, deliverer, matcher) against a database
// that does not exist yet (it is created), answering the API, then stopping cleanly on SIGTERM. It opens no internal
// RPC port unless asked (INTERNAL_RPC=1), and every socket it listens on is on 127.0.0.1 (BIND_HOST's default); the
// internal ports it serves when asked require the token it generated and kept in the database.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL, type Subprocess } from "bun";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { allocateRedisDb, type TestRedis } from "../../support/redis.ts";
import { derivedToken } from "../../../common/internal-auth.ts";

const ROOT = join(import.meta.dir, "..", "..", "..");
const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const DB_NAME = `webhooks_start_${process.pid}_${Date.now().toString(36)}`;

let redisDb: TestRedis;
let env: Record<string, string>;

beforeAll(async () => {
  redisDb = await allocateRedisDb();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${DB_NAME}`;
  const inherited = { ...(process.env as Record<string, string>) };
  // What an operator's shell would not have: internal ports, a bind address, a token.
  for (const name of ["INTERNAL_RPC", "INTERNAL_TOKEN", "BIND_HOST", "REGISTRY_PORT", "REGISTRY_GRPC_PORT", "DELIVERER_PORT", "DELIVERER_GRPC_PORT"]) {
    delete inherited[name];
  }
  env = {
    ...inherited,
    DATABASE_URL: url.toString(),
    REDIS_URL: redisDb.url,
    REDIS_PREFIX: "start-test:",
    APP_SECRET: "",
    PORT: "0",
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

/** An IPv4 or IPv6 address as /proc/net/tcp{,6} prints it (32-bit words in host byte order, little-endian here). */
function procAddress(hex: string): string {
  const words = hex.match(/.{8}/g)!.map((w) => w.match(/../g)!.reverse().join(""));
  if (words.length === 1) return words[0]!.match(/../g)!.map((b) => parseInt(b, 16)).join(".");
  const groups = words.join("").match(/.{4}/g)!.map((g) => parseInt(g, 16).toString(16));
  return groups.join(":").replace(/(^|:)0(:0)+(:|$)/, "::");
}

/** Every TCP socket the process listens on, read from the kernel (not from what the process says). */
function listeningSockets(pid: number): Array<{ address: string; port: number }> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const out: Array<{ address: string; port: number }> = [];
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(table, "utf8").split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== "0A" || !inodes.has(f[9]!)) continue;
      const [addr, port] = f[1]!.split(":") as [string, string];
      out.push({ address: procAddress(addr), port: parseInt(port, 16) });
    }
  }
  return out.sort((a, b) => a.port - b.port);
}

interface Started {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  lines: string[];
  /** The first log record with this message. */
  record(msg: string): Record<string, unknown> | undefined;
  stop(): Promise<void>;
}

/** `npm start` (cli/start.ts) with `extra` over the test's environment; resolves once the gateway listens. */
async function start(extra: Record<string, string> = {}): Promise<Started> {
  const proc = Bun.spawn([process.execPath, join(ROOT, "cli", "start.ts")], { env: { ...env, ...extra }, stdout: "pipe", stderr: "pipe", cwd: ROOT });
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
  const record = (msg: string) => {
    const line = lines.find((l) => l.includes(`"msg":"${msg}"`));
    return line === undefined ? undefined : (JSON.parse(line) as Record<string, unknown>);
  };
  const stop = async () => {
    if (proc.exitCode === null) proc.kill("SIGKILL");
    await proc.exited;
    await reader.catch(() => {});
  };
  for (let i = 0; i < 300 && record("gateway listening") === undefined && proc.exitCode === null; i++) await Bun.sleep(100);
  if (record("gateway listening") === undefined) {
    await stop();
    throw new Error(`start did not come up:\n${lines.join("\n")}\n${await stderr}`);
  }
  return { proc, lines, record, stop };
}

test("npm start creates the database, serves the API with every service, and stops on SIGTERM", async () => {
  expect(await databaseExists()).toBe(false);
  const started = await start();
  const { proc, lines } = started;
  try {
    const port = started.record("gateway listening")!.port as number;
    expect(port).toBeGreaterThan(0);
    for (const service of ["registry", "deliverer"]) expect(started.record(`${service} running in-process`)).toBeDefined();
    // No APP_SECRET: each service using the generated key kept in the database says so at start, naming APP_SECRET.
    const keptKeyWarnings = lines.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Record<string, unknown>).filter((r) => r.level === "warn" && String(r.msg).startsWith("APP_SECRET is not set"));
    expect(keptKeyWarnings.map((r) => r.service).sort()).toEqual(["deliverer", "registry"]);
    const matcherPort = started.record("matcher listening")!.port as number;
    expect(await databaseExists()).toBe(true);
    const base = `http://127.0.0.1:${port}`;

    // No internal RPC port: the process listens on the gateway and the matcher's health port only, both on loopback.
    expect(listeningSockets(proc.pid)).toEqual(
      [
        { address: "127.0.0.1", port },
        { address: "127.0.0.1", port: matcherPort },
      ].sort((a, b) => a.port - b.port),
    );

    const ready = await fetch(`${base}/readyz`);
    const readiness = (await ready.json()) as Record<string, unknown>;
    expect(ready.status).toBe(200);
    expect(readiness).toEqual({ status: "ready", checks: { registry: true }, informational: { redis: true, deliverer: true } });
    // The gateway's /metrics is the process's one registry: the internal services' metrics show there.
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain("process_cpu_seconds_total");

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
    await started.stop();
  }
}, 60_000);

test("INTERNAL_RPC=1 serves the internal ports on loopback, each requiring a credential from the root kept in the database", async () => {
  const started = await start({ INTERNAL_RPC: "1", REGISTRY_PORT: "0", REGISTRY_GRPC_PORT: "0", DELIVERER_PORT: "0", DELIVERER_GRPC_PORT: "0" });
  const admin = new SQL(env.DATABASE_URL!, { max: 1 });
  try {
    const registry = started.record("registry listening")!;
    const deliverer = started.record("deliverer listening")!;
    const sockets = listeningSockets(started.proc.pid);
    // gateway, matcher, and Connect + gRPC of the registry and the deliverer.
    expect(sockets).toHaveLength(6);
    for (const s of sockets) expect(s.address).toBe("127.0.0.1");
    expect(sockets.map((s) => s.port)).toEqual(expect.arrayContaining([registry.port, registry.grpcPort, deliverer.port, deliverer.grpcPort]));

    const [row] = await admin`SELECT value FROM app_settings WHERE name = 'internal_token'`;
    const token = (row as { value: string }).value;
    expect(Buffer.byteLength(token)).toBeGreaterThanOrEqual(32);
    const call = (authorization?: string) =>
      fetch(`http://127.0.0.1:${registry.port}/webhooks.registry.v1.ApiKeyService/CreateApiKey`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ name: "x" }),
      });
    expect((await call()).status).toBe(401);
    // Each caller's token derives from it; the gateway's may not mint keys.
    expect((await call(`Bearer ${derivedToken(token, "gateway")}`)).status).toBe(403);
    const served = await call(`Bearer ${token}`);
    expect(served.status).toBe(200);
    expect(((await served.json()) as { secret: string }).secret).toMatch(/^whk_/);
    expect(started.lines.join("\n")).not.toContain(token);
  } finally {
    await admin.close();
    await started.stop();
  }
}, 60_000);
