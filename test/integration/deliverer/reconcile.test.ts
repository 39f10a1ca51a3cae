// Schedule entries lost one by one while the built marker survives (eviction, a deleted shard key): the periodic
// reconciliation puts them back from PostgreSQL, so every event is still delivered, once; an event being attempted
// (leased) is never put back beside its lease, so no second replica sends it again.
import { afterAll, beforeAll, expect, test } from "bun:test";
import Redis from "ioredis";
import { setLogSink } from "../../../common/logger.ts";
import { createDeliverer, type DelivererHandle } from "../../../deliverer/index.ts";
import { scheduleRepaired } from "../../../deliverer/metrics.ts";
import type { OverdueCursor } from "../../../deliverer/db/types.ts";
import type { WorkerOptions } from "../../../deliverer/worker/index.ts";
import { enqueueTransfers, startDeliveryBed, type DeliveryBed } from "../../support/delivery.ts";

// Short enough for a test; production uses a lease (2 × timeout + 10 s) for the grace and 30 s for the interval.
const GRACE_MS = 500;
const worker: Partial<WorkerOptions> = { reconcileMs: 150, reconcileGraceMs: GRACE_MS, reconcileLimit: 7 };

let bed: DeliveryBed;
let other: DelivererHandle | undefined;
let redis: Redis;
const logLines: string[] = [];
let restoreSink: ((line: string) => void) | undefined;

beforeAll(async () => {
  // The worker starts once the test has damaged the schedule; a 6 s timeout lets an attempt hang for 3 s.
  bed = await startDeliveryBed({ env: { DELIVERY_TIMEOUT_MS: "6000" }, delivererDeps: { startWorker: false, worker } });
  redis = new Redis(bed.redis.url);
  restoreSink = setLogSink((line) => logLines.push(line));
}, 60_000);

afterAll(async () => {
  if (restoreSink) setLogSink(restoreSink);
  await other?.close();
  redis?.disconnect();
  await bed?.stop();
}, 60_000);

async function enqueue(subscriptionId: string, n: number, offset: number): Promise<string[]> {
  const res = await enqueueTransfers(bed, subscriptionId, n, offset);
  expect(res.created).toBe(n);
  return res.ids;
}

async function repairedTotal(): Promise<number> {
  return (await scheduleRepaired.get()).values[0]?.value ?? 0;
}

async function inSchedule(id: string): Promise<{ due: boolean; leased: boolean }> {
  const s = bed.deliverer!.schedule;
  const shard = s.shardOf(id);
  const [due, leased] = await Promise.all([redis.zscore(s.dueKey(shard), id), redis.zscore(s.leaseKey(shard), id)]);
  return { due: due !== null, leased: leased !== null };
}

async function waitDelivered(ids: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = (await bed.sql`
      SELECT count(*)::int AS n FROM event_deliveries WHERE status = 'delivered' AND event_id IN ${bed.sql(ids)}`) as { n: number }[];
    if (row!.n === ids.length) return;
    if (Date.now() > deadline) throw new Error(`${ids.length - row!.n} of ${ids.length} events not delivered within ${timeoutMs} ms`);
    await Bun.sleep(50);
  }
}

/** Successful deliveries on `path` by webhook-id (the receiver answers every request there with 200). */
function sentTimes(path: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const d of bed.receiver.deliveries(path)) {
    const id = d.headers["webhook-id"]!;
    out.set(id, (out.get(id) ?? 0) + 1);
  }
  return out;
}

test("entries lost from Redis (ZREM, a deleted shard key) are put back and every event is delivered exactly once", async () => {
  const path = "/lost";
  const sub = await bed.subscribe(path);
  const ids = await enqueue(sub.subscriptionId, 30, 0);
  const schedule = bed.deliverer!.schedule;
  // A schedule that was built once: only the rebuild would look at PostgreSQL, and it does not run.
  await schedule.markBuilt();

  // The overdue range pages by (due time, id); one Enqueue shares one due time, so the id breaks the ties.
  const paged: string[] = [];
  let cursor: OverdueCursor | null = null;
  for (;;) {
    const page = await bed.deliverer!.store.overduePage(new Date(Date.now() + 1_000), cursor, 7);
    paged.push(...page.map((e) => e.id));
    if (page.length < 7) break;
    cursor = page[page.length - 1]!;
  }
  expect(paged.sort()).toEqual([...ids].sort());

  // Lose every other entry one by one, and a whole shard's due set.
  const goneShard = schedule.shardOf(ids[1]!);
  const lost = ids.filter((id, i) => i % 2 === 0 || schedule.shardOf(id) === goneShard);
  for (const id of lost) await redis.zrem(schedule.dueKey(schedule.shardOf(id)), id);
  await redis.del(schedule.dueKey(goneShard));
  for (const id of ids) expect(await inSchedule(id)).toEqual({ due: !lost.includes(id), leased: false });
  expect(await schedule.isBuilt()).toBe(true);
  expect(lost.length).toBeLessThan(ids.length);

  const before = await repairedTotal();
  bed.deliverer!.worker.start();
  await waitDelivered(ids, 15_000);
  // A few more passes: a finished event is never brought back to be sent again.
  await Bun.sleep(1_000);

  const sent = sentTimes(path);
  expect(sent.size).toBe(ids.length);
  expect([...sent.values()].every((n) => n === 1)).toBe(true);
  expect(new Set(ids)).toEqual(new Set(sent.keys()));
  // Each lost entry was put back (an entry put back twice, by a pass racing a delivery, is dropped by its claim).
  expect((await repairedTotal()) - before).toBeGreaterThanOrEqual(lost.length);
  const warned = logLines.map((l) => JSON.parse(l) as { level?: string; msg?: string; repaired?: number }).filter((l) => l.level === "warn" && l.msg?.includes("put back"));
  expect(warned.reduce((n, l) => n + (l.repaired ?? 0), 0)).toBeGreaterThanOrEqual(lost.length);
  expect(await schedule.stats()).toMatchObject({ due: 0, leased: 0 });
}, 30_000);

test("an event being attempted (leased, overdue in PostgreSQL) is not put back: no second replica sends it", async () => {
  // A second replica with the same schedule: it would claim and send anything put back beside a live lease.
  other = await createDeliverer(bed.config, { registry: bed.registryTransport, worker });
  const path = "/in-flight";
  bed.receiver.setBehaviour(path, { kind: "delay", ms: 3_000 });
  const sub = await bed.subscribe(path);
  const ids = await enqueue(sub.subscriptionId, 10, 1_000);
  await bed.receiver.waitForCount(path, ids.length, 5_000);

  // Every event is mid-attempt, overdue by more than the grace, and many reconciliation passes have run.
  await Bun.sleep(GRACE_MS * 3);
  const [row] = (await bed.sql`
    SELECT count(*)::int AS n FROM event_deliveries
    WHERE status = 'pending' AND next_attempt_at < ${new Date(Date.now() - GRACE_MS)} AND event_id IN ${bed.sql(ids)}`) as { n: number }[];
  expect(row!.n).toBe(ids.length);
  for (const id of ids) expect(await inSchedule(id)).toEqual({ due: false, leased: true });

  await waitDelivered(ids, 10_000);
  await Bun.sleep(1_000);
  const sent = sentTimes(path);
  expect(sent.size).toBe(ids.length);
  expect([...sent.values()].every((n) => n === 1)).toBe(true);
}, 30_000);
