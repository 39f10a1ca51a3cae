// `bun run bench delivery-queues [events]` (also the second half of `bun run bench delivery`): AMQP (RabbitMQ,
// 127.0.0.1:5672) and NATS JetStream (127.0.0.1:4222) deliveries with every outcome persisted in PostgreSQL, to 1
// and to 32 destinations (exchanges / subjects), each beside a bare publish loop of the same client library run
// just before it (the floor: confirmed / acked publishes to as many exchanges / subjects as the figure's, 256 in
// flight, on a connection with the sender's options, nothing read or written elsewhere); then
// StreamEvents to one Connect consumer beside a bare keyset read of the same rows. Goals (issue 12): AMQP and NATS
// each ≥ 10,000 deliveries/s and ≥ 0.5× their floor; StreamEvents ≥ 50,000 events/s.
// Its own PostgreSQL database, Redis DB, exchanges, queues and stream, all removed at the end.
// BENCH_QUEUE_ONLY=<regex> runs only the figures whose label matches (StreamEvents alone enqueues its own events);
// BENCH_WORKER='{"queuePerDestinationConcurrency":64}' passes worker options (deliverer/worker/) for experiments;
// BENCH_STREAM='{"messageEvents":32}' passes StreamEvents options (deliverer/stream.ts); BENCH_STREAM_WARMUPS
// (default 2) sets the unmeasured reads of the whole stream before the measured one.
//
// Why it is built this way (the figures, and what was measured on the way to them, are in README "Benchmarks"):
// - Every queue figure first runs an unmeasured warm-up (BENCH_QUEUE_WARMUP, default 10,000 deliveries through each
//   kind), as a service that has run a while: in a cold run JavaScriptCore's JIT threads took a third or more of the
//   process's CPU, a share that shrinks as a run grows. The bench prints the CPU per delivery beside the floors' CPU per
//   publish, split by thread (bench/thread-cpu.ts), and what each cost PostgreSQL, the broker and Redis: on two shared
//   cores the services' share decides the ratio as much as this process's.
// - A floor runs right before its figure, after the figure's events are enqueued, so both share the machine's state;
//   a floor run once at the start drifted from the deliveries measured after it. A floor publishes the message a
//   delivery publishes (the senders' properties and Standard Webhooks headers: RabbitMQ does more per message with a
//   headers table), its headers made before the clock starts, to as many exchanges / subjects as its figure, over a
//   connection with the sender's options. Each floor's Nats-Msg-Ids are new: JetStream drops a repeated one as a
//   duplicate, which costs it less than a message.
// - Progress is read from the worker's own counter (an outcome counts once its write applied), not by polling
//   PostgreSQL, which would scan the run's rows each time and tax the figure it measures.
// - The process runs with the services' allocator setting (cli/run-bun.sh; the first line prints it).
// - StreamEvents: the consumer runs in its own process (bench/stream-consumer.ts), as a platform service's does;
//   sharing this process's event loop, its decoding was a quarter of that loop's samples. A cold server reads the
//   stream at 60-75% of a warm one's rate (JIT), so the figure is the read after BENCH_STREAM_WARMUPS whole reads. A
//   long transaction anywhere in the cluster holds the stream back (rows newer than the oldest running transaction
//   wait for it).
import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { SQL } from "bun";
import amqp from "amqplib";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect as natsConnect } from "@nats-io/transport-node";
import { setLogLevel } from "../common/logger.ts";
import { inProcessTransport } from "../common/rpc.ts";
import { serveService } from "../common/service.ts";
import { createDeliverer } from "../deliverer/index.ts";
import { attemptsTotal, eventsFinished } from "../deliverer/metrics.ts";
import { QUEUE_MESSAGE_HEADERS } from "../deliverer/send.ts";
import { amqpMessageOptions } from "../deliverer/send-amqp.ts";
import { connectOptions, natsMessageHeaders } from "../deliverer/send-nats.ts";
import { DeliveryService, NewEventSchema } from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import { runJsonChild } from "./child-json.ts";
import { counterSum } from "./counters.ts";
import { allocatorNote } from "./cpu.ts";
import { startBenchRegistry } from "./registry-bed.ts";
import type { ConsumerResult, ConsumerSpec } from "./stream-consumer.ts";
import { serviceCpu, threadCpu, threadCpuPer } from "./thread-cpu.ts";
import { transfer } from "./transfers.ts";

const RABBIT = process.env.BENCH_AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672/";
const NATS = process.env.BENCH_NATS_URL ?? "nats://127.0.0.1:4222";
const WINDOW = 256;
const WARMUP = Number(process.env.BENCH_QUEUE_WARMUP ?? 10_000);
/** Unmeasured reads of the whole stream before the measured one (BENCH_STREAM_WARMUPS). */
const STREAM_WARMUPS = Number(process.env.BENCH_STREAM_WARMUPS ?? 2);
// BENCH_QUEUE_ONLY=<regex>: only the figures whose label matches (profiling one of them).
const ONLY = process.env.BENCH_QUEUE_ONLY ? new RegExp(process.env.BENCH_QUEUE_ONLY, "i") : undefined;

function rate(n: number, ms: number): number {
  return Math.round((n / ms) * 1000);
}

/** Events finished (delivered or failed), from the worker's metric. */
const finishedCount = () => counterSum(eventsFinished);
/** Attempts that failed, from the worker's metric. */
const failedAttempts = () => counterSum(attemptsTotal, (labels) => labels.result !== "success");

/** Microseconds of this process's CPU per operation. */
function cpuPer(cpu: NodeJS.CpuUsage, n: number): number {
  return Math.round((cpu.user + cpu.system) / n);
}

function fmt(n: number): string {
  return `${n.toLocaleString("en-US")}/s`;
}

/** A bare publish loop's rate and its CPU in this process per publish. */
interface Floor {
  rate: number;
  cpuUs: number;
  /** The services' CPU per publish, by process ("nats-server 14 µs, …"). */
  services: string;
}

function line(label: string, ours: string, baseline: string, note = ""): void {
  console.log(`${label.padEnd(44)} ${ours.padStart(12)}   baseline ${baseline.padStart(12)}   ${note}`);
}


/** Runs `n` publishes with at most WINDOW in flight. */
async function windowed(n: number, publish: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: WINDOW }, async () => {
      while (next < n) await publish(next++);
    }),
  );
}

// The floors publish the message a delivery publishes: the senders' own properties and headers
// (deliverer/send-amqp.ts amqpMessageOptions, send-nats.ts natsMessageHeaders), with a signature of the real length,
// not computed. RabbitMQ's work per message grows with a headers table: a bare loop
// without one measured 13,000-17,000/s against 10,600 with it on the same machine.
const FLOOR_TIME = Math.floor(Date.now() / 1000);
function floorHeaders(i: number): Record<(typeof QUEUE_MESSAGE_HEADERS)[number], string> {
  return {
    "webhook-id": `evt_floor${String(i).padStart(17, "0")}`,
    "webhook-timestamp": String(FLOOR_TIME),
    "webhook-signature": `v1,${Buffer.alloc(32, i % 251).toString("base64")}`,
    "x-subscription-id": "sub_floor0000000000000000",
  };
}

const SAMPLE_BODY = JSON.stringify({ id: "evt_x", kind: "wallet.transfer.broadcasted", date: new Date().toISOString(), subscriptionId: "sub_x", data: transfer(0) }, (_, v) => (typeof v === "bigint" ? Number(v) : v));

export async function queueBench(events: number): Promise<void> {
  setLogLevel("warn");
  console.log(`queue delivery benchmark: ${events.toLocaleString("en-US")} events per run; ${allocatorNote()}`);
  const bed = await startBenchRegistry("benchqueues");
  const { database, config, registry, registryTransport, subs, key } = bed;
  await registry.store.addBroker("bench-amqp", "amqp", RABBIT);
  await registry.store.addBroker("bench-nats", "nats", NATS);
  for (const broker of ["bench-amqp", "bench-nats"]) await registry.store.grantBroker({ broker, keyId: "*", prefix: "", defaultExchange: true });
  const sql = new SQL(database.url, { max: 4 });

  const amqpConn = await amqp.connect(RABBIT);
  const admin = await amqpConn.createChannel();
  const tag = randomBytes(4).toString("hex");
  const exchanges = Array.from({ length: 32 }, (_, i) => `bench-${tag}-${i}`);
  const queue = `bench-${tag}`;
  await admin.assertQueue(queue, { durable: false });
  for (const ex of exchanges) {
    await admin.assertExchange(ex, "direct", { durable: false });
    await admin.bindQueue(queue, ex, "k");
  }
  const nc = await natsConnect({ servers: new URL(NATS).host });
  const jsm = await jetstreamManager(nc);
  // The NATS floor's connection has the options the sender's has (deliverer/send-nats.ts connectOptions): without
  // noAsyncTraces the client captures a stack for every publish, and the floor measured ~35,000/s where it does
  // 42,000–55,000 with them, a third less than the library can do.
  const floorNc = await natsConnect(connectOptions(NATS, 10_000));
  const stream = `BENCH_${tag}`;
  await jsm.streams.add({ name: stream, subjects: [`bench.${tag}.>`], storage: "memory" as never });

  try {
    const newSub = async (destination: Record<string, string>) =>
      (await subs.createSubscription({
        keyId: key.key!.id,
        destination: { type: "", url: "", broker: "", exchange: "", routingKey: "", subject: "", ...destination },
        events: ["wallet.transfer.broadcasted"],
        status: "",
        description: "",
      })).subscription!.id;

    // ---- warm-up, unmeasured: a service that has run a while has its code compiled (JavaScriptCore's JIT took
    // ~98 µs per delivery in a cold 10,000-event run, ~42 in a 40,000 one), and the floors' client libraries are the
    // same code the senders run. BENCH_QUEUE_WARMUP=0 measures cold.
    if (WARMUP > 0) {
      await runFresh([await newSub({ type: "amqp", broker: "bench-amqp", exchange: exchanges[0]!, routingKey: "k" })], WARMUP);
      await runFresh([await newSub({ type: "nats", broker: "bench-nats", subject: `bench.${tag}.warm` })], WARMUP);
      console.log(`  (warm-up: ${WARMUP.toLocaleString("en-US")} deliveries each through AMQP and NATS, not measured)`);
    }

    // ---- floors: the client libraries alone ----
    // Each figure's floor runs right before its deliveries, after their events are enqueued, so the two share the
    // machine's state: one pair of floors at the start of the run varied 39,000–54,000/s (NATS) between runs on one
    // machine while the deliveries measured after them varied far less. The messages' headers are made before the
    // clock starts (a delivery's come from its signing, which is ours); each floor's ids are new (JetStream would
    // drop a repeated Nats-Msg-Id as a duplicate, which costs it less than a message).
    let floorRound = 0;
    const newHeaderSets = () => {
      const first = floorRound++ * events;
      return Array.from({ length: events }, (_, i) => floorHeaders(first + i));
    };
    const floorJs = jetstream(floorNc, { timeout: 10_000 });
    const amqpFloor = (destinations: number) => async (): Promise<Floor> => {
      const sets = newHeaderSets();
      const confirm = await amqpConn.createConfirmChannel();
      try {
        return await timedFloor(() =>
          windowed(events, (i) =>
            new Promise<void>((resolve, reject) =>
              confirm.publish(exchanges[i % destinations]!, "k", Buffer.from(SAMPLE_BODY), amqpMessageOptions(sets[i]!), (err) => (err ? reject(err) : resolve())),
            ),
          ),
        );
      } finally {
        await confirm.close();
      }
    };
    const natsFloor = (destinations: number) => (): Promise<Floor> => {
      const sets = newHeaderSets();
      return timedFloor(() =>
        windowed(events, (i) => floorJs.publish(`bench.${tag}.floor${i % destinations}`, SAMPLE_BODY, { msgID: sets[i]!["webhook-id"], headers: natsMessageHeaders(sets[i]!) })),
      );
    };
    async function timedFloor(run: () => Promise<void>): Promise<Floor> {
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      const services0 = serviceCpu();
      await run();
      return { rate: rate(events, performance.now() - t0), cpuUs: cpuPer(process.cpuUsage(cpu0), events), services: threadCpuPer(services0, serviceCpu(), events) };
    }

    const measure = async (label: string, subIds: string[], floorOf: () => Promise<Floor>) => {
      if (ONLY && !ONLY.test(label)) return;
      const { ours, floor } = await runFresh(subIds, events, floorOf);
      line(label, fmt(ours), fmt(floor.rate), `ratio ${(ours / floor.rate).toFixed(2)}× of the floor (goal ≥ 10,000/s and ≥ 0.5×)`);
    };

    // Each run gets a fresh deliverer (a stopped worker does not start again).
    async function runFresh(subIds: string[], events: number, floorOf?: () => Promise<Floor>): Promise<{ ours: number; floor: Floor }> {
      const d = await createDeliverer(config, { registry: registryTransport, startWorker: false, worker: JSON.parse(process.env.BENCH_WORKER ?? "{}") as Record<string, number> });
      const client = createClient(DeliveryService, inProcessTransport(d.routes));
      try {
        for (let i = 0; i < events; i += 1_000) {
          const batch = Array.from({ length: Math.min(1_000, events - i) }, (_, j) =>
            create(NewEventSchema, { subscriptionId: subIds[(i + j) % subIds.length]!, kind: "wallet.transfer.broadcasted", transfer: transfer(i + j) }),
          );
          await client.enqueue({ events: batch });
        }
        const floor = floorOf ? await floorOf() : { rate: 0, cpuUs: 0, services: "" };
        if (floorOf) console.log(`  floor: ${fmt(floor.rate)}, ${floor.cpuUs} µs of this process's CPU per publish; services ${floor.services}`);
        const start = performance.now();
        const cpu0 = process.cpuUsage();
        const threads0 = threadCpu();
        const services0 = serviceCpu();
        const finished0 = await finishedCount();
        const failed0 = await failedAttempts();
        d.worker.start();
        const deadline = Date.now() + 600_000;
        let lastCheck = Date.now();
        // Progress is read from the worker's own counter (an outcome counts once its write applied): polling
        // PostgreSQL every few milliseconds would scan the run's rows each time and tax the figure it measures.
        for (;;) {
          if ((await finishedCount()) - finished0 >= events) {
            const cpu = process.cpuUsage(cpu0);
            const ms = performance.now() - start;
            const services = threadCpuPer(services0, serviceCpu(), events);
            const [row] = (await sql`SELECT count(*)::int AS n FROM event_deliveries WHERE subscription_id IN ${sql(subIds)} AND status = 'delivered'`) as [{ n: number }];
            if (row.n < events) throw new Error(`the worker counted ${events} finished but PostgreSQL has ${row.n} delivered`);
            console.log(`  cpu ${(((cpu.user + cpu.system) / 1000 / ms) * 100).toFixed(0)}% of one core, ${Math.round((cpu.user + cpu.system) / events)} µs per delivery (${threadCpuPer(threads0, threadCpu(), events)}); services ${services}`);
            return { ours: rate(events, ms), floor };
          }
          // A failed attempt shows in the worker's metric; only then is PostgreSQL asked for its reason (the query
          // scans the run's pending states, ~60 ms of a backend each time on a busy machine).
          if (Date.now() - lastCheck > 1_000) {
            lastCheck = Date.now();
            if ((await failedAttempts()) > failed0) {
              const failed = (await sql`SELECT response_body AS b FROM event_deliveries WHERE subscription_id IN ${sql(subIds)} AND status <> 'delivered' AND attempts > 0 LIMIT 1`) as { b: string }[];
              throw new Error(`an attempt failed: ${failed[0]?.b ?? "(its event was since delivered)"}`);
            }
          }
          if (Date.now() > deadline) throw new Error(`only ${(await finishedCount()) - finished0} of ${events} delivered`);
          await Bun.sleep(10);
        }
      } finally {
        await d.close();
      }
    }
    console.log("");
    line("figure", "ours", "", "");
    await measure("AMQP deliveries/s, 1 exchange", [await newSub({ type: "amqp", broker: "bench-amqp", exchange: exchanges[0]!, routingKey: "k" })], amqpFloor(1));
    const amqp32 = await Promise.all(exchanges.map((ex) => newSub({ type: "amqp", broker: "bench-amqp", exchange: ex, routingKey: "k" })));
    await measure("AMQP deliveries/s, 32 exchanges", amqp32, amqpFloor(32));
    await measure("NATS deliveries/s, 1 subject", [await newSub({ type: "nats", broker: "bench-nats", subject: `bench.${tag}.one` })], natsFloor(1));
    const nats32 = await Promise.all(Array.from({ length: 32 }, (_, i) => newSub({ type: "nats", broker: "bench-nats", subject: `bench.${tag}.s${i}` })));
    await measure("NATS deliveries/s, 32 subjects", nats32, natsFloor(32));

    // ---- StreamEvents: every event of the key (4 runs' worth) to one Connect consumer ----
    if (ONLY && !ONLY.test("StreamEvents")) return;
    const streamer = await createDeliverer(config, { registry: registryTransport, startWorker: false, stream: JSON.parse(process.env.BENCH_STREAM ?? "{}") as Record<string, number> });
    const served = await serveService(streamer, 0, 0);
    try {
      // Runs skipped (BENCH_QUEUE_ONLY): the key gets the same 4 runs' worth of events, left pending.
      const [{ n: had }] = (await sql`SELECT count(*)::int AS n FROM events`) as [{ n: number }];
      if (had < 4 * events) {
        const sub = await newSub({ type: "nats", broker: "bench-nats", subject: `bench.${tag}.stream` });
        const enqueue = createClient(DeliveryService, inProcessTransport(streamer.routes));
        for (let i = had; i < 4 * events; i += 1_000) {
          const n = Math.min(1_000, 4 * events - i);
          await enqueue.enqueue({ events: Array.from({ length: n }, (_, j) => create(NewEventSchema, { subscriptionId: sub, kind: "wallet.transfer.broadcasted", transfer: transfer(i + j) })) });
        }
      }
      const [{ n: total }] = (await sql`SELECT count(*)::int AS n FROM events`) as [{ n: number }];
      // Floor: the same rows read by the same keyset, 2,000 at a time, straight from PostgreSQL.
      const bareRead = async (): Promise<number> => {
        let read = 0;
        let after = { xid: "0", seq: 0 };
        for (;;) {
          // ORDER BY names the table's columns (a bare "xid" is the text alias) and sorting is off as in
          // store.streamPage: either way the fresh, unanalysed table gets a sort of every remaining row of the key on
          // each page (an earlier floor of 9,267/s measured exactly that).
          const rows = (await sql.begin(async (tx) => {
            await tx`SET LOCAL enable_sort = off`;
            return tx`SELECT id, payload, xid::text AS xid, seq FROM events WHERE key_id = ${key.key!.id}
              AND (events.xid, events.seq) > (${after.xid}::xid8, ${after.seq}::bigint) ORDER BY events.xid, events.seq LIMIT 2000`;
          })) as { xid: string; seq: number }[];
          if (rows.length === 0) return read;
          read += rows.length;
          after = { xid: rows.at(-1)!.xid, seq: Number(rows.at(-1)!.seq) };
        }
      };
      // One unmeasured read first: the first scan of freshly written rows sets their hint bits (page writes), a
      // cost that would otherwise fall on whichever of the two reads came first.
      await bareRead();
      // The consumer runs in its own process, as a platform service's does: in this one it shared the event loop
      // with the server, and its decoding (a quarter of that loop's time) was charged to the stream's rate.
      const streamAll = async (report = true): Promise<number> => {
        const cpu0 = process.cpuUsage();
        const threads0 = threadCpu();
        const spec: ConsumerSpec = { url: `http://127.0.0.1:${served.http.port}`, secret: key.secret, total };
        const r = await runJsonChild<ConsumerResult>("stream-consumer.ts", spec);
        const cpu = process.cpuUsage(cpu0);
        if (report) console.log(`  cpu ${cpuPer(cpu, r.got)} µs per event in the server (${threadCpuPer(threads0, threadCpu(), r.got)}); the consumer's process ${Math.round(r.cpuUs / r.got)} µs`);
        return rate(r.got, r.ms);
      };
      // The figure is a server that has run a while, as the queue figures' warm-up makes it: JavaScriptCore compiles
      // the stream's code over the first reads (the first of 80,000 events ran at 27,000-37,000 events/s, later ones
      // at 40,000-60,000 on one slow machine). The reads before the measured one are printed, not hidden.
      const warmups: number[] = [];
      for (let i = 0; i < STREAM_WARMUPS; i++) warmups.push(await streamAll(false));
      if (warmups.length > 0) console.log(`  earlier reads of the same stream (a server starting cold): ${warmups.map(fmt).join(", ")}`);
      const streamRate = await streamAll();
      const t0 = performance.now();
      const readCpu0 = process.cpuUsage();
      const read = await bareRead();
      const floor = rate(read, performance.now() - t0);
      console.log(`  bare read: cpu ${cpuPer(process.cpuUsage(readCpu0), read)} µs per row in this process`);
      line(`StreamEvents to one consumer (${total} events)`, fmt(streamRate), fmt(floor), `bare keyset SELECT of the same rows; goal ≥ 50,000/s`);
    } finally {
      await served.stop();
      await streamer.close();
    }
  } finally {
    for (const ex of exchanges) await admin.deleteExchange(ex).catch(() => {});
    await admin.deleteQueue(queue).catch(() => {});
    await amqpConn.close().catch(() => {});
    await jsm.streams.delete(stream).catch(() => {});
    await nc.close().catch(() => {});
    await floorNc.close().catch(() => {});
    await sql.close();
    await bed.close();
  }
}

export default async function bench(): Promise<void> {
  await queueBench(Number(process.argv[3] ?? process.env.BENCH_QUEUE_EVENTS ?? 20_000));
}
