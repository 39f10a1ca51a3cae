// `bun run bench delivery [events]`: signed HTTPS deliveries to a local receiver (its own process, keep-alive) with
// every outcome persisted in PostgreSQL, beside the same work done the way a typical Node team would (BullMQ jobs,
// one row read and one row written per job, the same sender and signing) in the same run; then the claim rate with
// 1,000,000 scheduled events beside one-event-per-round-trip claims. Goals (issue 4): ≥ 3,000 deliveries/s and
// ≥ 2× BullMQ; ≥ 20,000 claims/s at 1,000,000 pending. Uses its own PostgreSQL database and Redis DB.
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { SQL } from "bun";
import { Queue, Worker } from "bullmq";
import Redis from "ioredis";
import { setLogLevel } from "../common/logger.ts";
import { inProcessTransport } from "../common/rpc.ts";
import { createSsrfPolicy } from "../common/ssrf.ts";
import { createDeliverer } from "../deliverer/index.ts";
import { renderPayload } from "../deliverer/payload.ts";
import { Schedule } from "../deliverer/schedule.ts";
import { createSender } from "../deliverer/send.ts";
import { deliveryHeaders } from "../deliverer/sign.ts";
import { TargetCache } from "../deliverer/targets.ts";
import { DeliveryService, NewEventSchema } from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import { allocatorNote } from "./cpu.ts";
import { queueBench } from "./delivery-queues.ts";
import { startBenchRegistry } from "./registry-bed.ts";
import { transfer } from "./transfers.ts";

const ROOT = join(import.meta.dir, "..");
const CLAIM_PENDING = Number(process.env.BENCH_CLAIM_PENDING ?? 1_000_000);
const CLAIM_TAKE = Number(process.env.BENCH_CLAIM_TAKE ?? 300_000);
// Requests in flight to the one destination, the same for both: BullMQ's worker concurrency, and the deliverer's
// per-host limit (its production default). More in flight only adds queueing on a 2-core machine.
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);

function rate(n: number, ms: number): string {
  return `${Math.round((n / ms) * 1000).toLocaleString("en-US")}/s`;
}

function line(label: string, ours: string, baseline: string, note = ""): void {
  console.log(`${label.padEnd(44)} ${ours.padStart(12)}   baseline ${baseline.padStart(12)}   ${note}`);
}

async function waitDelivered(sql: SQL, subscriptionId: string, n: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = (await sql`SELECT count(*)::int AS n FROM event_deliveries WHERE subscription_id = ${subscriptionId} AND status = 'delivered'`) as [{ n: number }];
    if (row.n >= n) return;
    if (Date.now() > deadline) throw new Error(`only ${row.n} of ${n} delivered within ${timeoutMs} ms`);
    await Bun.sleep(50);
  }
}


export default async function bench(): Promise<void> {
  const events = Number(process.argv[3] ?? process.env.BENCH_EVENTS ?? 50_000);
  setLogLevel("warn");
  console.log(`delivery benchmark: ${events.toLocaleString("en-US")} events, ${CONCURRENCY} in flight, ${navigatorCores()} cores; ${allocatorNote()}`);

  const receiverProc = Bun.spawn([join(ROOT, "node_modules", ".bin", "bun"), join(ROOT, "tools", "receiver", "main.ts")], {
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = receiverProc.stdout.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  const { port, caFile } = JSON.parse(first.split("\n")[0]!) as { port: number; caFile: string };

  const bed = await startBenchRegistry("benchdeliv", { DELIVERY_CA_FILE: caFile, SSRF_ALLOW_CIDRS: "127.0.0.1/32" });
  const { database, redisDb, config, registryTransport, subs, key } = bed;
  const newSub = async (path: string) =>
    (await subs.createSubscription({
      keyId: key.key!.id,
      destination: { type: "https", url: `https://localhost:${port}${path}` },
      events: ["wallet.transfer.broadcasted"],
      status: "",
      description: "",
    })).subscription!.id;
  const sql = new SQL(database.url, { max: 4 });

  try {
    // ---- ours: Enqueue in batches, then the worker drains the schedule ----
    console.log("… the deliverer");
    const ourSub = await newSub("/ours");
    const deliverer = await createDeliverer(config, {
      registry: registryTransport,
      startWorker: false,
      worker: { perHostConcurrency: CONCURRENCY },
    });
    const delivery = createClient(DeliveryService, inProcessTransport(deliverer.routes));
    let t0 = performance.now();
    for (let i = 0; i < events; i += 1_000) {
      const batch = Array.from({ length: Math.min(1_000, events - i) }, (_, j) =>
        create(NewEventSchema, { subscriptionId: ourSub, kind: "wallet.transfer.broadcasted", transfer: transfer(i + j, "tron:mainnet") }),
      );
      await delivery.enqueue({ events: batch });
    }
    const ourEnqueueMs = performance.now() - t0;
    t0 = performance.now();
    let cpu0 = process.cpuUsage();
    deliverer.worker.start();
    await waitDelivered(sql, ourSub, events, 600_000);
    const ourMs = performance.now() - t0;
    const ourCpu = cpuMicrosPer(process.cpuUsage(cpu0), events);
    await deliverer.close();

    // ---- baseline: BullMQ, one job per event, one SELECT and one UPDATE per job ----
    console.log("… BullMQ");
    const bullSub = await newSub("/bullmq");
    const connection = { host: "127.0.0.1", port: 6379, db: redisDb.db, maxRetriesPerRequest: null };
    const queue = new Queue("deliveries", { connection, prefix: "bench-bull" });
    const sender = createSender({ policy: createSsrfPolicy({ allowCidrs: config.ssrfAllowCidrs }), timeoutMs: config.deliveryTimeoutMs, caFile });
    const targets = new TargetCache(registryTransport, 1_000);
    t0 = performance.now();
    for (let i = 0; i < events; i += 1_000) {
      const rows = Array.from({ length: Math.min(1_000, events - i) }, (_, j) => {
        const id = `evt_${String(i + j).padStart(26, "0")}`;
        const t = transfer(i + j, "tron:mainnet");
        const data = { ...t, blockNumber: Number(t.blockNumber), blockTimestampMs: undefined, blockTimestamp: Number(t.blockTimestampMs) };
        const payload = { id, kind: "wallet.transfer.broadcasted", date: new Date().toISOString(), subscriptionId: bullSub, data };
        return { id, tx: t.txId, li: t.logIndex, payload: renderPayload(payload) };
      });
      await sql`WITH e AS (INSERT INTO events (id, subscription_id, kind, chain_id, tx_id, log_index, payload, created_at)
          SELECT v.id, ${bullSub}, 'wallet.transfer.broadcasted', 'tron:mainnet', v.tx, v.li, v.payload, now()
          FROM json_to_recordset(${JSON.stringify(rows)}::text::json) AS v(id text, tx text, li int, payload text)
          RETURNING id, created_at)
        INSERT INTO event_deliveries (event_id, created_at, subscription_id, status, next_attempt_at, updated_at)
        SELECT e.id, e.created_at, ${bullSub}, 'pending', now(), now() FROM e`;
      await queue.addBulk(rows.map((r) => ({ name: "deliver", data: { eventId: r.id }, opts: { jobId: r.id, attempts: 7, backoff: { type: "custom" }, removeOnComplete: true } })));
    }
    const bullEnqueueMs = performance.now() - t0;
    const schedule = config.retrySchedule;
    // The BullMQ worker gets its own pool, the size a service typically runs with (the deliverer's is 10 too).
    const pool = new SQL(database.url, { max: 10 });
    t0 = performance.now();
    cpu0 = process.cpuUsage();
    const worker = new Worker(
      "deliveries",
      async (job) => {
        const [row] = (await pool`SELECT e.id, e.subscription_id, e.created_at, d.attempts, e.payload FROM events e
          JOIN event_deliveries d ON d.event_id = e.id AND d.created_at = e.created_at WHERE e.id = ${job.data.eventId as string}`) as [{ id: string; subscription_id: string; created_at: Date; attempts: number; payload: string }];
        const target = (await targets.get([row.subscription_id])).get(row.subscription_id)!;
        const body = row.payload;
        const headers = deliveryHeaders({ eventId: row.id, subscriptionId: row.subscription_id, secrets: target.secrets, body, at: new Date() });
        const out = await sender.send({ url: target.url, body, headers });
        const attempts = row.attempts + 1;
        const status = out.ok ? "delivered" : attempts >= schedule.length ? "failed" : "pending";
        await pool`UPDATE event_deliveries SET status = ${status}, attempts = ${attempts}, delivery_count = delivery_count + ${out.ok ? 1 : 0},
          response_status = ${out.status}, response_body = ${out.body}, updated_at = now() WHERE event_id = ${row.id} AND created_at = ${row.created_at}`;
        if (!out.ok) throw new Error(out.body);
      },
      {
        connection,
        prefix: "bench-bull",
        concurrency: CONCURRENCY,
        settings: { backoffStrategy: (attemptsMade: number) => schedule[attemptsMade] ?? 0 },
      },
    );
    await waitDelivered(sql, bullSub, events, 900_000);
    const bullMs = performance.now() - t0;
    const bullCpu = cpuMicrosPer(process.cpuUsage(cpu0), events);
    await worker.close();
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
    await pool.close();

    // ---- claim rate with 1,000,000 scheduled events ----
    console.log("… claims");
    const redis = new Redis(redisDb.url);
    await redis.flushdb();
    const sched = new Schedule(redis, { prefix: "claim:", shards: 8 });
    const past = Date.now() - 60_000;
    for (let i = 0; i < CLAIM_PENDING; i += 20_000) {
      await sched.add(Array.from({ length: Math.min(20_000, CLAIM_PENDING - i) }, (_, j) => ({ id: `evt_${String(i + j).padStart(26, "0")}`, dueMs: past + ((i + j) % 60_000) })));
    }
    let claimed = 0;
    t0 = performance.now();
    while (claimed < CLAIM_TAKE) {
      const now = Date.now();
      claimed += (await sched.claim(now, now + 60_000, 512)).ids.length;
    }
    const claimMs = performance.now() - t0;
    // Baseline: one event per round trip (what a job queue does per job), same script, same sets.
    let single = 0;
    const singleTake = Math.min(20_000, CLAIM_TAKE);
    const t1 = performance.now();
    while (single < singleTake) {
      const now = Date.now();
      single += (await sched.claim(now, now + 60_000, 1)).ids.length;
    }
    const singleMs = performance.now() - t1;
    const stats = await sched.stats();
    redis.disconnect();

    console.log("");
    line("figure", "ours", "", "");
    line(`successful deliveries/s (${events} events, PG outcomes)`, rate(events, ourMs), rate(events, bullMs),
      `BullMQ + same sender; ratio ${(bullMs / ourMs).toFixed(2)}× (goal ≥ 3,000/s and ≥ 2×)`);
    line("CPU of the delivering process per delivery", `${ourCpu} µs`, `${bullCpu} µs`, "lower is better (receiver, PostgreSQL and Redis run elsewhere)");
    line("enqueue (PG insert + schedule)", rate(events, ourEnqueueMs), rate(events, bullEnqueueMs), "BullMQ addBulk + INSERT");
    line(`claims/s with ${CLAIM_PENDING.toLocaleString("en-US")} scheduled`, rate(claimed, claimMs), rate(single, singleMs),
      `one event per round trip; goal ≥ 20,000/s (${stats.due.toLocaleString("en-US")} still due)`);
  } finally {
    receiverProc.kill("SIGTERM");
    await receiverProc.exited;
    await sql.close();
    await bed.close();
  }
  // Then AMQP, NATS and StreamEvents (bench/delivery-queues.ts); BENCH_QUEUE_EVENTS=0 skips them.
  const queueEvents = Number(process.env.BENCH_QUEUE_EVENTS ?? 20_000);
  if (queueEvents > 0) await queueBench(queueEvents);
}

function cpuMicrosPer(u: NodeJS.CpuUsage, n: number): number {
  return Math.round((u.user + u.system) / n);
}

function navigatorCores(): number {
  return (globalThis.navigator as { hardwareConcurrency?: number } | undefined)?.hardwareConcurrency ?? 0;
}
