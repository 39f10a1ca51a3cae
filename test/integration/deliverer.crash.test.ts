// Faults lose nothing. The deliverer runs as a separate process and is killed with SIGKILL mid-run, then restarted:
// every event is delivered at least once. Redis is flushed mid-run: the schedule is rebuilt from PostgreSQL.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Redis from "ioredis";
import { join } from "node:path";
import { serveService, type ServedService } from "../../common/service.ts";
import { enqueueTransfers, startDeliveryBed, waitForEvent, type DeliveryBed } from "../support/delivery.ts";

const ROOT = join(import.meta.dir, "..", "..");
const BUN = join(ROOT, "node_modules", ".bin", "bun");

async function waitAllDelivered(bed: DeliveryBed, path: string, ids: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = new Set(bed.receiver.deliveries(path).map((d) => d.headers["webhook-id"]));
    const [row] = (await bed.sql`SELECT count(*)::int AS n FROM events WHERE status = 'delivered'`) as { n: number }[];
    if (ids.every((id) => seen.has(id)) && row!.n === ids.length) return;
    if (Date.now() > deadline) {
      const missing = ids.filter((id) => !seen.has(id)).length;
      throw new Error(`${missing} of ${ids.length} events never reached the receiver; ${row!.n} delivered in PostgreSQL`);
    }
    await Bun.sleep(100);
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
    const child = Bun.spawn([BUN, join(ROOT, "deliverer", "main.ts")], {
      cwd: ROOT,
      env: {
        ...process.env,
        ...bed.env,
        REGISTRY_URL: `http://127.0.0.1:${registryServed.http.port}`,
        DELIVERER_PORT: "0",
        DELIVERER_GRPC_PORT: "0",
      },
      stdout: "ignore",
      stderr: "ignore",
    });
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

describe("Redis loses its data mid-run", () => {
  let bed: DeliveryBed;

  beforeAll(async () => {
    bed = await startDeliveryBed();
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
    const redis = new Redis(bed.redis.url);
    await redis.flushdb();
    const seenAtFlush = bed.receiver.count(path);
    expect(seenAtFlush).toBeLessThan(1_500);
    await waitAllDelivered(bed, path, ids, 40_000);
    expect(await redis.exists(bed.deliverer!.schedule.builtKey)).toBe(1);
    redis.disconnect();
  }, 60_000);
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
    const { createDeliverer } = await import("../../deliverer/index.ts");
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
