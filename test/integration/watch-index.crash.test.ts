// A registry that dies between its Redis write and its COMMIT must not leave the watch index disagreeing with
// PostgreSQL: the write intent it left behind is found by a watchdog, lookups wait, and the rebuild makes the index
// equal to PostgreSQL again, address by address. The crash is real: the registry runs as its own process, its PATCH
// is held before COMMIT by a row lock this test takes, and it is killed with SIGKILL once Redis shows its writes.
// The watchdog that repairs runs in this process with a 1 s intent bound instead of INTENT_MAX_AGE_MS (30 s).
// Real PostgreSQL and Redis (test/support/stack.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { SQL, type Subprocess } from "bun";
import fixtures from "../../fixtures/tron/addresses.json";
import { log } from "../../common/logger.ts";
import { networkTransport } from "../../common/rpc.ts";
import { intentsKey, lookup } from "../../common/watch-index.ts";
import { SubscriptionService } from "../../gen/webhooks/registry/v1/registry_pb.ts";
import { WatchIndex } from "../../registry/watch-index.ts";
import { startStack, TEST_DESTINATION, type Stack, type TestKey } from "../support/stack.ts";
import { actualIndex, expectedIndex, waitUntilReady } from "../support/watch-index.ts";
import { freePorts } from "../support/ports.ts";
import { until } from "../support/wait.ts";

const ROOT = join(import.meta.dir, "..", "..");
const MAINNET = "tron:mainnet";
const VALID = fixtures.valid as string[];
/** The intent bound of the repairing watchdog: short, so the test need not wait 30 s. */
const BOUND_MS = 1_000;

let stack: Stack;
let key: TestKey;
let sql: SQL;
const procs: Subprocess[] = [];

beforeAll(async () => {
  stack = await startStack();
  key = await stack.createKey();
  sql = new SQL(stack.database.url, { max: 3 });
}, 60_000);

afterAll(async () => {
  for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
  await Promise.all(procs.map((p) => p.exited));
  await sql?.close();
  await stack?.stop();
}, 60_000);

async function api(method: string, path: string, body?: unknown, signal?: AbortSignal) {
  const res = await fetch(stack.baseUrl + path, {
    method,
    headers: { authorization: `Bearer ${key.key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : null };
}

async function subscribe(addresses: string[], status = "enabled"): Promise<string> {
  const created = await api("POST", "/v1/subscriptions", {
    destination: { type: "https", url: TEST_DESTINATION },
    events: ["wallet.transfer.broadcasted"],
    status,
  });
  expect(created.status).toBe(201);
  const id = created.body!.id as string;
  const res = await api("PATCH", `/v1/subscriptions/${id}/filters/addresses`, {
    add: addresses.map((address) => ({ chainId: MAINNET, address })),
  });
  expect(res.status).toBe(200);
  return id;
}

const intents = () => stack.registry.redis.hlen(intentsKey(stack.config.redisPrefix));

/** Does the served index name `id` as an active watcher of `address`? Waits while the index is not ready. */
async function watches(address: string, id: string): Promise<boolean> {
  const found = await lookup(stack.registry.redis, stack.config.redisPrefix, MAINNET, [address], { waitMs: 20_000 });
  return found.get(address)?.some((w) => w.subscriptionId === id) ?? false;
}

/** `bun run registry` on the stack's database and Redis, as a second replica would run. */
async function spawnRegistry(): Promise<{ proc: Subprocess; url: string }> {
  const [port, grpcPort] = freePorts(2) as [number, number];
  const proc = Bun.spawn([process.execPath, join(ROOT, "registry", "main.ts")], {
    cwd: ROOT,
    env: {
      ...(process.env as Record<string, string>),
      DATABASE_URL: stack.database.url,
      REDIS_URL: stack.redis.url,
      REDIS_PREFIX: stack.config.redisPrefix,
      APP_SECRET: stack.config.appSecret!,
      INTERNAL_TOKEN: stack.config.internalToken!,
      REGISTRY_PORT: String(port),
      REGISTRY_GRPC_PORT: String(grpcPort),
      LOG_LEVEL: "warn",
    },
    stdout: "ignore",
    stderr: "ignore",
  });
  procs.push(proc);
  const url = `http://127.0.0.1:${port}`;
  await until("the spawned registry is ready", async () => {
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1_000) }).catch(() => null);
    return res?.status === 200;
  }, 20_000, 25);
  return { proc, url };
}

/** A registry's watchdog as it runs from start (tick at once, then every 100 ms), giving up on intents after 1 s. */
function startWatchdog(): WatchIndex {
  const { store, redis } = stack.registry;
  const wi = new WatchIndex(store.db, redis, stack.config.redisPrefix, log.child({ part: "test-watchdog" }), undefined, { intentMaxAgeMs: BOUND_MS });
  void wi.tick();
  wi.start(100);
  return wi;
}

describe("a write-through whose transaction never commits", () => {
  test("PATCH killed after its Redis write and before COMMIT: the removal and the addition are undone", async () => {
    const [x, y, ...rest] = VALID as [string, string, ...string[]];
    const id = await subscribe([x, ...rest.slice(0, 3)]);
    await waitUntilReady(stack.registry.redis, stack.config.redisPrefix);
    // Committed changes leave no intent behind: nothing for the watchdog to act on in normal operation.
    expect(await intents()).toBe(0);

    const { proc, url } = await spawnRegistry();
    // Hold the row the PATCH deletes: its DELETE waits on this lock, while its index writes (which run beside the
    // SQL) reach Redis. The transaction can then only end in the crash.
    const blocker = await sql.reserve();
    await blocker`BEGIN`;
    await blocker`SELECT 1 FROM subscription_addresses WHERE subscription_id = ${id} AND chain_id = ${MAINNET} AND address = ${x} FOR UPDATE`;
    const subs = createClient(SubscriptionService, networkTransport(url, { token: stack.config.internalToken }));
    const call = subs.patchAddresses({
      keyId: key.id,
      id,
      add: [{ chainId: MAINNET, address: y }],
      remove: [{ chainId: MAINNET, address: x }],
    });
    call.catch(() => {});
    await until("the PATCH reached Redis", async () => !(await watches(x, id)) && (await watches(y, id)), 15_000, 25);
    expect(await intents()).toBe(1);
    proc.kill("SIGKILL");
    await proc.exited;
    await blocker`ROLLBACK`;
    blocker.release();

    // What the crash leaves: PostgreSQL still has x (and never got y), Redis says otherwise, and the index is
    // served as ready, so without a repair the matcher would miss transfers to x.
    const [row] = (await sql`SELECT count(*)::int AS n FROM subscription_addresses WHERE subscription_id = ${id} AND address IN (${x}, ${y})`) as { n: number }[];
    expect(row!.n).toBe(1);
    expect(await watches(x, id)).toBe(false);
    expect(await actualIndex(stack.registry.redis, stack.config.redisPrefix)).not.toEqual(await expectedIndex(sql));

    const watchdog = startWatchdog();
    try {
      // Once the intent is taken up, lookups wait for the rebuild instead of answering "not watched".
      await until("the watchdog took up the intent", async () => (await intents()) === 0, 15_000, 25);
      expect(await watches(x, id)).toBe(true);
      expect(await watches(y, id)).toBe(false);
      await waitUntilReady(stack.registry.redis, stack.config.redisPrefix, 15_000);
      expect(await actualIndex(stack.registry.redis, stack.config.redisPrefix)).toEqual(await expectedIndex(sql));
    } finally {
      await watchdog.stop();
    }
  }, 30_000);

  test("a status change committed, its hook never ran: the enabled subscription is found", async () => {
    const z = VALID[10]!;
    const id = await subscribe([z], "disabled");
    await waitUntilReady(stack.registry.redis, stack.config.redisPrefix);
    expect(await watches(z, id)).toBe(false);

    // The registry commits the change, then stops before its hook writes Redis (as a process frozen, then killed).
    const hooks = stack.registry.context.hooks;
    const original = hooks.subscriptionChanged;
    let thaw = () => {};
    const frozen = new Promise<void>((resolve) => (thaw = resolve));
    hooks.subscriptionChanged = async (r) => {
      await frozen;
      await original(r);
    };
    const abort = new AbortController();
    const body = { destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.broadcasted"], status: "enabled" };
    const put = api("PUT", `/v1/subscriptions/${id}`, body, abort.signal);
    put.catch(() => {});
    const watchdog = startWatchdog();
    try {
      await until("the change committed", async () => {
        const [s] = (await sql`SELECT status FROM subscriptions WHERE id = ${id}`) as { status: string }[];
        return s?.status === "enabled";
      }, 15_000, 25);
      // The watchdog repairs without the hook: the index comes to say what PostgreSQL says.
      await until("the watchdog took up the intent", async () => (await intents()) === 0, 15_000, 25);
      expect(await watches(z, id)).toBe(true);
      await waitUntilReady(stack.registry.redis, stack.config.redisPrefix, 15_000);
      expect(await actualIndex(stack.registry.redis, stack.config.redisPrefix)).toEqual(await expectedIndex(sql));
      // The frozen request, let go late, still answers and changes nothing further.
      hooks.subscriptionChanged = original;
      thaw();
      expect((await put).status).toBe(200);
      expect(await intents()).toBe(0);
      expect(await actualIndex(stack.registry.redis, stack.config.redisPrefix)).toEqual(await expectedIndex(sql));
    } finally {
      hooks.subscriptionChanged = original;
      thaw();
      await watchdog.stop();
      abort.abort();
    }
  }, 30_000);
});
