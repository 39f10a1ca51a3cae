// Faults lose nothing. The deliverer runs as a separate process and is killed with SIGKILL mid-run, then restarted:
// every event is delivered at least once. Redis is flushed mid-run (one server, and every master of a real 3-master
// Redis Cluster), and a cluster master is killed and started again empty: the schedule is rebuilt from PostgreSQL.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { IORedis } from "../../../common/redis.ts";
import { serveService, type ServedService } from "../../../common/service.ts";
import { enqueueTransfers, spawnDelivererProcess, startDeliveryBed, waitForEvent, type DeliveryBed } from "../../support/delivery.ts";
import { REDIS_KINDS } from "../../support/redis-cluster.ts";
import { waitUntilReady } from "../../support/watch-index.ts";

async function waitAllDelivered(bed: DeliveryBed, path: string, ids: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = new Set(bed.receiver.deliveries(path).map((d) => d.headers["webhook-id"]));
    const [row] = (await bed.sql`SELECT count(*)::int AS n FROM event_deliveries WHERE status = 'delivered'`) as { n: number }[];
    if (ids.every((id) => seen.has(id)) && row!.n === ids.length) return;
    if (Date.now() > deadline) {
      const missing = ids.filter((id) => !seen.has(id)).length;
      throw new Error(`${missing} of ${ids.length} events never reached the receiver; ${row!.n} delivered in PostgreSQL`);
    }
    await Bun.sleep(100);
  }
}

/** The port of the master serving `key`'s slot (CLUSTER KEYSLOT and CLUSTER SLOTS as any node sees them). */
async function ownerOf(ports: number[], key: string): Promise<number> {
  const c = new IORedis({ host: "127.0.0.1", port: ports[0]! });
  try {
    const slot = Number(await c.cluster("KEYSLOT", key));
    const ranges = await c.cluster("SLOTS");
    const master = ranges.find(([from, to]) => slot >= from && slot <= to)?.[2];
    if (!master) throw new Error(`no node serves ${key}`);
    return Number(master[1]);
  } finally {
    c.disconnect();
  }
}

describe("crash safety", () => {
  let bed: DeliveryBed;
  let registryServed: ServedService;
  const children: ReturnType<typeof Bun.spawn>[] = [];

  beforeAll(async () => {
    // The in-process deliverer only answers Enqueue; the worker runs in the child processes.
    bed = await startDeliveryBed({ delivererDeps: { startWorker: false } });
    registryServed = await serveService(bed.registry, 0);
  }, 60_000);

  afterAll(async () => {
    for (const c of children) c.kill("SIGKILL");
    await registryServed?.stop();
    await bed?.stop();
  }, 60_000);

  function spawnDeliverer() {
    const child = spawnDelivererProcess(bed, `http://127.0.0.1:${registryServed.http.port}`);
    children.push(child);
    return child;
  }

  test("SIGKILL mid-run, then restart: every event delivered at least once, none lost", async () => {
    const path = "/crash";
    bed.receiver.setBehaviour(path, { kind: "delay", ms: 40 });
    const sub = await bed.subscribe(path);
    const ids = (await enqueueTransfers(bed, sub.subscriptionId, 2_000, 0)).ids;
    expect(new Set(ids).size).toBe(2_000);

    const first = spawnDeliverer();
    await bed.receiver.waitForCount(path, 300, 30_000);
    first.kill("SIGKILL");
    await first.exited;
    const seenAtKill = bed.receiver.count(path);
    expect(seenAtKill).toBeLessThan(2_000);

    const second = spawnDeliverer();
    // Claims the killed worker held come back when their lease (2 × timeout + 10 s) expires.
    await waitAllDelivered(bed, path, ids, 50_000);
    second.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  }, 90_000);
});

describe.each(REDIS_KINDS)("Redis loses its data mid-run (Redis %s)", (redisKind) => {
  let bed: DeliveryBed;

  beforeAll(async () => {
    bed = await startDeliveryBed({ redisKind });
  }, 60_000);

  afterAll(async () => {
    await bed?.stop();
  }, 60_000);

  test("FLUSHDB: the schedule is rebuilt from PostgreSQL and every event is delivered", async () => {
    const path = "/flush";
    bed.receiver.setBehaviour(path, { kind: "delay", ms: 40 });
    const sub = await bed.subscribe(path);
    const ids = (await enqueueTransfers(bed, sub.subscriptionId, 1_500, 10_000)).ids;
    await bed.receiver.waitForCount(path, 200, 30_000);
    await bed.redis.flush();
    const seenAtFlush = bed.receiver.count(path);
    expect(seenAtFlush).toBeLessThan(1_500);
    await waitAllDelivered(bed, path, ids, 40_000);
    expect(await bed.deliverer!.schedule.isBuilt()).toBe(true);
  }, 60_000);
});

describe("a Redis Cluster master restarted mid-run", () => {
  let bed: DeliveryBed;

  beforeAll(async () => {
    bed = await startDeliveryBed({ redisKind: "cluster" });
  }, 60_000);

  afterAll(async () => {
    await bed?.stop();
  }, 60_000);

  test("SIGKILL a master holding schedule shards, start it again empty: every event is delivered", async () => {
    const path = "/node-restart";
    bed.receiver.setBehaviour(path, { kind: "delay", ms: 40 });
    const sub = await bed.subscribe(path);
    const ids = (await enqueueTransfers(bed, sub.subscriptionId, 1_500, 20_000)).ids;
    await bed.receiver.waitForCount(path, 200, 30_000);
    // The master serving shard 0's slot: its due and lease sets (and its built marker) vanish with it.
    const schedule = bed.deliverer!.schedule;
    const cluster = bed.redis.cluster!;
    const owner = await ownerOf(cluster.nodes.map((n) => n.port), schedule.dueKey(0));
    await cluster.restart(owner, 500);
    expect(bed.receiver.count(path)).toBeLessThan(1_500);
    await waitAllDelivered(bed, path, ids, 60_000);
    expect(await schedule.isBuilt()).toBe(true);
    // The watch index shards that lived on the node are gone too: the registry's watchdog rebuilds them.
    await waitUntilReady(bed.registry.redis, bed.config.redisPrefix, 30_000);
  }, 90_000);
});

describe("graceful shutdown", () => {
  let bed: DeliveryBed;

  beforeAll(async () => {
    bed = await startDeliveryBed({ env: { DELIVERY_TIMEOUT_MS: "10000" } });
  }, 60_000);

  afterAll(async () => {
    await bed?.stop();
  }, 60_000);

  test("stopping hands claimed events back to the schedule, uncounted; another deliverer sends them", async () => {
    const path = "/shutdown";
    bed.receiver.setBehaviour(path, { kind: "delay", ms: 5_000 });
    const sub = await bed.subscribe(path);
    const created = await bed.delivery.createTestEvent({ ...sub, kind: "" });
    const ref = { ...sub, eventId: created.event!.id };
    await bed.receiver.waitForCount(path, 1);
    // A short grace: the attempt in flight is abandoned and its event released.
    await bed.deliverer!.worker.stop(100);
    const stats = await bed.deliverer!.schedule.stats();
    expect(stats).toMatchObject({ due: 1, leased: 0 });
    const held = (await bed.delivery.getEvent(ref)).event!;
    expect(held.status).toBe("pending");
    expect(held.attempts).toBe(0);

    bed.receiver.setBehaviour(path, { kind: "ok" });
    const { createDeliverer } = await import("../../../deliverer/index.ts");
    const next = await createDeliverer(bed.config, { registry: bed.registryTransport });
    try {
      const done = await waitForEvent(bed, ref, (e) => e.status === "delivered");
      expect(done.attempts).toBe(1);
      expect(done.deliveryCount).toBe(1);
    } finally {
      await next.close();
    }
  }, 30_000);
});
