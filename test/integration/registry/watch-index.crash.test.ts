// A registry killed at the worst moments of an index change (registry/watch-index/outbox.ts): after its COMMIT and before
// its outbox row reached Redis, and before its COMMIT. The crash is real: the registry runs as its own process, is
// held at the moment wanted by a lock this test takes, and is killed with SIGKILL. The stack's in-process registry
// plays the surviving replica: its applier takes the row up. Throughout, a lookup loop checks that no lookup ever
// names a watcher PostgreSQL has not committed, and that the index converges without a rebuild (same generation).
// Real PostgreSQL and Redis (test/support/stack.ts): one server, and a real 3-master Redis Cluster (the spawned
// registry reaches it through the same redis+cluster:// URL).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { SQL, type Subprocess } from "bun";
import fixtures from "../../../fixtures/tron/addresses.json";
import { networkTransport } from "../../../common/rpc.ts";
import { readState } from "../../../common/watch-index/generations.ts";
import { lookup } from "../../../common/watch-index/reader.ts";
import { holdChainLock, releaseChainLock } from "../../../registry/watch-index/chain-lock.ts";
import { SubscriptionService } from "../../../gen/webhooks/registry/v1/registry_pb.ts";
import { REDIS_KINDS } from "../../support/redis-cluster.ts";
import { startStack, TEST_DESTINATION, type Stack, type TestKey } from "../../support/stack.ts";
import { actualIndex, expectedIndex, waitUntilReady } from "../../support/watch-index.ts";
import { freePorts } from "../../support/ports.ts";
import { until } from "../../support/wait.ts";

const ROOT = join(import.meta.dir, "..", "..", "..");
const MAINNET = "tron:mainnet";
const VALID = fixtures.valid as string[];

let stack: Stack;
let key: TestKey;
let sql: SQL;
const procs: Subprocess[] = [];

async function api(method: string, path: string, body?: unknown) {
  const res = await fetch(stack.baseUrl + path, {
    method,
    headers: { authorization: `Bearer ${key.key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : null };
}

async function subscribe(addresses: string[]): Promise<string> {
  const created = await api("POST", "/v1/subscriptions", {
    destination: { type: "https", url: TEST_DESTINATION },
    events: ["wallet.transfer.broadcasted"],
  });
  expect(created.status).toBe(201);
  const id = created.body!.id as string;
  const res = await api("PATCH", `/v1/subscriptions/${id}/filters/addresses`, {
    add: addresses.map((address) => ({ chainId: MAINNET, address })),
  });
  expect(res.status).toBe(200);
  return id;
}

const redis = () => stack.registry.redis;
const prefix = () => stack.config.redisPrefix;
const mainnet = () => stack.registry.watchIndex.index(MAINNET);

/** Does the served index name `id` as a watcher of `address`? */
async function watches(address: string, id: string): Promise<boolean> {
  const found = await lookup(mainnet(), [address], { waitMs: 20_000, includeInactive: true });
  return found.get(address)?.some((w) => w.subscriptionId === id) ?? false;
}

async function committed(id: string, address: string): Promise<boolean> {
  const rows = await sql`SELECT 1 FROM subscription_addresses WHERE subscription_id = ${id} AND chain_id = ${MAINNET} AND address = ${address}`;
  return rows.length > 0;
}

const outboxRows = async () => ((await sql`SELECT count(*)::int AS n FROM watch_outbox WHERE applied_position IS NULL`) as { n: number }[])[0]!.n;

/**
 * Looks `address` up until stopped; each time the index names `id` as its watcher, PostgreSQL must already have the
 * entry committed (read right after the lookup: a commit can only have happened earlier, never be undone).
 */
function uncommittedWatch(address: string, id: string) {
  let stop = false;
  let lookups = 0;
  const seenUncommitted: number[] = [];
  const done = (async () => {
    while (!stop) {
      if ((await watches(address, id)) && !(await committed(id, address))) seenUncommitted.push(Date.now());
      lookups++;
      await Bun.sleep(5);
    }
  })();
  return {
    async end() {
      stop = true;
      await done;
      return { lookups, seenUncommitted };
    },
  };
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
      LOG_LEVEL: "error",
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

describe.each(REDIS_KINDS)("a registry killed in the middle of an index change (Redis %s)", (redisKind) => {
  beforeAll(async () => {
    stack = await startStack({ redisKind });
    key = await stack.createKey();
    sql = new SQL(stack.database.url, { max: 3 });
  }, 60_000);

  afterAll(async () => {
    for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
    await Promise.all(procs.splice(0).map((p) => p.exited));
    await sql?.close();
    await stack?.stop();
  }, 60_000);

  test("killed after COMMIT, before its outbox row reached Redis: another replica applies it, no rebuild", async () => {
    const [x, y, ...rest] = VALID as [string, string, ...string[]];
    const id = await subscribe([x, ...rest.slice(0, 3)]);
    await waitUntilReady(redis(), prefix());
    expect(await watches(x, id)).toBe(true);
    const before = await readState(mainnet());

    const { proc, url } = await spawnRegistry();
    // Hold mainnet's chain lock (registry/watch-index/chain-lock.ts): no replica can apply its rows until it is released,
    // so the spawned registry's PATCH commits and then waits for an apply that cannot happen before the kill.
    const holder = await sql.reserve();
    await holdChainLock(holder, MAINNET);
    const watch = uncommittedWatch(y, id);
    try {
      const subs = createClient(SubscriptionService, networkTransport(url, { token: stack.config.internalToken }));
      const call = subs.patchAddresses({ keyId: key.id, id, add: [{ chainId: MAINNET, address: y }], remove: [{ chainId: MAINNET, address: x }] });
      call.catch(() => {});
      await until("the PATCH committed", () => committed(id, y), 15_000, 10);
      proc.kill("SIGKILL");
      await proc.exited;

      // What the crash leaves: PostgreSQL has the change and its outbox row; Redis does not have it yet (behind,
      // never ahead).
      expect(await committed(id, x)).toBe(false);
      expect(await outboxRows()).toBe(1);
      expect(await watches(x, id)).toBe(true);
      expect(await watches(y, id)).toBe(false);
    } finally {
      await releaseChainLock(holder, MAINNET);
      holder.release();
    }
    // The surviving replica (the stack's registry) takes the row up at its next poll.
    await until("the row was applied", async () => (await outboxRows()) === 0, 15_000, 25);
    expect(await watches(y, id)).toBe(true);
    expect(await watches(x, id)).toBe(false);
    expect(await actualIndex(redis(), prefix())).toEqual(await expectedIndex(sql));
    const after = await readState(mainnet());
    expect(after.cur).toBe(before.cur); // converged without a rebuild
    const seen = await watch.end();
    expect(seen.lookups).toBeGreaterThan(5);
    expect(seen.seenUncommitted).toEqual([]);
  }, 60_000);

  test("killed before COMMIT: nothing reaches the index, nothing is left in the outbox", async () => {
    const [, , , , , , , x, y] = VALID as string[];
    const id = await subscribe([x!]);
    await waitUntilReady(redis(), prefix());
    const before = await readState(mainnet());

    const { proc, url } = await spawnRegistry();
    // Hold the row the PATCH deletes: its DELETE waits on this lock, so its transaction can only end in the crash.
    const blocker = await sql.reserve();
    await blocker`BEGIN`;
    await blocker`SELECT 1 FROM subscription_addresses WHERE subscription_id = ${id} AND address = ${x!} FOR UPDATE`;
    const watch = uncommittedWatch(y!, id);
    try {
      const subs = createClient(SubscriptionService, networkTransport(url, { token: stack.config.internalToken }));
      const call = subs.patchAddresses({ keyId: key.id, id, add: [{ chainId: MAINNET, address: y! }], remove: [{ chainId: MAINNET, address: x! }] });
      call.catch(() => {});
      // The PATCH is waiting on the lock (its transaction is open) ...
      await until("the PATCH is blocked", async () => {
        const rows = await sql`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%DELETE FROM subscription_addresses%'`;
        return rows.length > 0;
      }, 15_000, 10);
      await Bun.sleep(300); // lookups keep running meanwhile
      proc.kill("SIGKILL");
      await proc.exited;
    } finally {
      await blocker`ROLLBACK`;
      blocker.release();
    }
    await Bun.sleep(500); // an applier's poll or two
    const seen = await watch.end();
    expect(seen.seenUncommitted).toEqual([]);
    expect(await committed(id, y!)).toBe(false);
    expect(await outboxRows()).toBe(0);
    expect(await watches(x!, id)).toBe(true);
    expect(await watches(y!, id)).toBe(false);
    expect(await actualIndex(redis(), prefix())).toEqual(await expectedIndex(sql));
    expect((await readState(mainnet())).cur).toBe(before.cur);
  }, 60_000);

  test("two registries taking turns on one subscription, rows applied in one go: the end state is the last commit's", async () => {
    const [x, y] = (VALID as string[]).slice(20, 22) as [string, string];
    const id = await subscribe([y]);
    const { url } = await spawnRegistry();
    const remote = createClient(SubscriptionService, networkTransport(url, { token: stack.config.internalToken }));
    const local = createClient(SubscriptionService, networkTransport(stack.config.registryUrl, { token: stack.config.internalToken }));
    // The chain's applier lock is held while 40 PATCHes commit, alternately through each registry, each swapping x and
    // y: their rows pile up, and are then applied in one go by whichever registry gets the lock first. Applied in any
    // order but commit order, the end state would differ (e.g. reversed: x watched, y not).
    const holder = await sql.reserve();
    await holdChainLock(holder, MAINNET);
    const answers: Promise<unknown>[] = [];
    try {
      for (let i = 0; i < 40; i++) {
        const [add, remove] = i % 2 === 0 ? [x, y] : [y, x];
        const call = (i % 2 === 0 ? remote : local).patchAddresses({ keyId: key.id, id, add: [{ chainId: MAINNET, address: add }], remove: [{ chainId: MAINNET, address: remove }] });
        call.catch(() => {});
        answers.push(call);
        // Committed (its outbox row is there) before the next one is sent: the commit order is i's order.
        await until(`PATCH ${i} committed`, async () => (await outboxRows()) === i + 1, 15_000, 5);
      }
    } finally {
      await releaseChainLock(holder, MAINNET);
      holder.release();
    }
    await Promise.all(answers);
    await until("the outbox drained", async () => (await outboxRows()) === 0, 15_000, 25);
    expect(await committed(id, y)).toBe(true);
    expect(await watches(y, id)).toBe(true);
    expect(await watches(x, id)).toBe(false);
    expect(await actualIndex(redis(), prefix())).toEqual(await expectedIndex(sql));
  }, 60_000);
});
