// `bun run bench delivery-queues [events]` (also the second half of `bun run bench delivery`): AMQP (RabbitMQ,
// 127.0.0.1:5672) and NATS JetStream (127.0.0.1:4222) deliveries with every outcome persisted in PostgreSQL, to 1
// and to 32 destinations (exchanges / subjects), each beside a bare publish loop of the same client library run
// just before it (the floor: confirmed / acked publishes to as many exchanges / subjects as the figure's, 256 in
// flight, on a connection with the sender's options, nothing read or written elsewhere); then
// StreamEvents to one Connect consumer beside a bare keyset read of the same rows. Goals (issue 12): AMQP and NATS
// each ≥ 10,000 deliveries/s and ≥ 0.5× their floor; StreamEvents ≥ 50,000 events/s.
// Its own PostgreSQL database, Redis DB, exchanges, queues and stream, all removed at the end.
// BENCH_QUEUE_ONLY=<regex> runs only the figures whose label matches (StreamEvents alone enqueues its own events);
// BENCH_WORKER='{"queuePerDestinationConcurrency":64}' passes worker options (deliverer/worker.ts) for experiments;
// BENCH_STREAM='{"messageEvents":32}' passes StreamEvents options (deliverer/stream.ts); BENCH_STREAM_WARMUPS
// (default 2) sets the unmeasured reads of the whole stream before the measured one.
//
// Where the time goes (2026-11-24, bun --cpu-prof of this process, per-phase timers in the worker, Redis
// INFO commandstats, the per-thread CPU this bench prints): the bench process spends 55-75 µs of CPU per queue delivery on a
// quiet machine, several times that on a loaded one — claim (one pipelined Lua call per shard, ~140 claims for 20,000
// events), the row load (the payload comes as the JSON text it is sent as), signing (node:crypto's HMAC since the
// standardwebhooks library's pure-JS one was the largest single item), the client library's publish (JetStream: a
// request per message, with its own per-request allocations), and the outcome write (JSON of the batch); a bare
// publish costs the client library alone. Not all of it is the event loop: in a 20,000-event run a third or more is
// JavaScriptCore compiling (JIT threads) and the allocator's and GC's threads, a share that shrinks as a run grows
// (JIT ~98 µs per delivery at 10,000 events, ~42 at 40,000), so the run first delivers BENCH_QUEUE_WARMUP (10,000)
// events through each kind unmeasured, as a service that has run a while; the floors print their own CPU per publish. On a shared machine the outcome write is the critical path:
// PostgreSQL updates the event's delivery state and inserts the attempt row. When the state was part of the event
// row, every outcome copied the row, payload included, and inserted into all 11 indexes of `events` (the status is
// indexed, so the update is never heap-only), and a batch of ~200 outcomes took 25-190 ms depending on the load. The
// state now has its own narrow table (`event_deliveries`, 5 indexes; README "Event storage"), which the outcome
// statement alone updates: per outcome, from pg_stat_statements of this bench's database, 55-145 µs of exec time and
// 1.4-1.8 KB of WAL against 153-337 µs and 3.2-5.0 KB before (README "Benchmarks", "Delivery"). Most of what was left
// was planning: PostgreSQL planned the outcome statement anew for every batch (its generic plan is estimated dearer
// over the daily partitions), ~1.6 ms a batch, folding the batch's JSON into a constant (jsonb_in of all of it) on
// the way. On its generic plan (deliverer/store.ts GENERIC_PLANS) a 40,000-outcome AMQP run measured 36 µs of exec
// time per outcome against 152 before, the PostgreSQL backends fell from ~90% of a core to ~46%, and the machine
// stopped being saturated (bun ~55%, RabbitMQ ~50%). Writes overlap (4 at once) and grow while PostgreSQL is busy.
// With 128 publishes in flight per destination and claims of at most 256, a NATS subject's slots sat empty for a
// third of a run (the in-flight count sampled every 5 ms): JetStream acked a round of 128 in 5-10 ms, and the next
// claim and its row load took longer on the loaded machine. 256 in flight (the floors' window) and claims of 512
// took NATS to one subject from ~7,500 to ~9,200 deliveries/s and AMQP from ~5,300 to ~5,900 in alternated runs
// (2026-11-24, a slow machine), and the deliverer's CPU per delivery from ~100 to ~76 µs (fewer, larger rounds);
// overlapping a claim's row load with the next claim measured no faster, because the two cores were then saturated:
// per NATS delivery (before the change) the bench process ~105 µs (JIT and GC threads included), PostgreSQL ~80
// (the outcome's update and attempt insert, ~23 buffer hits and 1.4 KB of WAL each, and the row load), nats-server
// ~50, Redis ~8, against a floor publish's ~75 + ~25. The floors publish the message a delivery publishes, headers
// included: RabbitMQ's work per message grows with a headers table (its floor measured 13,000-17,000/s without one,
// ~10,600 with).
// The process runs with mimalloc's purging off (cli/run-bun.sh; the first line prints the setting): with Bun's default,
// freed buffers came back from the kernel as fresh pages, which cost more CPU than the work (figures in README
// "Benchmarks", *Memory*).
// StreamEvents: a page is one index range read with sorting off (before statistics exist the planner sorted every
// remaining row of the key on each page, O(n²) for a consumer far behind) and the next page is read while this one
// is encoded; a page goes out in messages of up to 250 events (one 2 MB message per page cost more in buffer growth
// and copies than the extra frames). The consumer runs in its own process (bench/stream-consumer.ts), as a platform
// service's does: when it shared this process's event loop, that loop ran at 85-96% of a core and a quarter of its
// samples were the consumer's decoding (bun --cpu-prof, 2026-11-24). Apart, on a quiet machine the server costs
// 11-14 µs of CPU per event (the payload's rendering and the protobuf encoding about a fifth each, the HTTP stream
// a tenth), the consumer 4-5 µs, PostgreSQL's read about 9; none of the three is saturated (server ~65% of a core,
// PostgreSQL ~50%, consumer ~25%), so the rate is set by the hand-offs between them. Since the payload is stored as
// the text it is sent as, nothing renders it and PostgreSQL no longer prints jsonb for the read: 33,000-35,000 →
// ~55,000 events/s on one machine. What the server's samples show since is copying the message's bytes (protobuf's
// writer growing its buffer and encoding the payload strings, its final copy, the Connect envelope's copy, Bun's
// stream write); 32, 64 or 100 events per message instead of 250 measured the same within the runs' spread. The
// page read is not what bounds it: store.streamPage alone, walked page by page in one process, read the same 80,000
// rows at 108,000-130,000/s, and toBinary of a 250-event message costs ~1 µs per event in a loop; the server's
// copies of each message's bytes on their way out cost far more per byte than that loop. Why: each copy landed in
// freshly allocated memory that the allocator had handed back to the kernel, and faulting and zeroing those pages
// was most of the cost (perf; see above). A cold server runs the
// first read at 60-75% of a warm one's rate (JIT), so the figure is a third read of the stream (BENCH_STREAM_WARMUPS).
// A long transaction anywhere in the cluster also holds the stream back (rows newer than the oldest running
// transaction wait for it).
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
import { threadCpu, threadCpuPer } from "./thread-cpu.ts";
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
      await run();
      return { rate: rate(events, performance.now() - t0), cpuUs: cpuPer(process.cpuUsage(cpu0), events) };
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
        const floor = floorOf ? await floorOf() : { rate: 0, cpuUs: 0 };
        if (floorOf) console.log(`  floor: ${fmt(floor.rate)}, ${floor.cpuUs} µs of this process's CPU per publish`);
        const start = performance.now();
        const cpu0 = process.cpuUsage();
        const threads0 = threadCpu();
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
            const [row] = (await sql`SELECT count(*)::int AS n FROM event_deliveries WHERE subscription_id IN ${sql(subIds)} AND status = 'delivered'`) as [{ n: number }];
            if (row.n < events) throw new Error(`the worker counted ${events} finished but PostgreSQL has ${row.n} delivered`);
            console.log(`  cpu ${(((cpu.user + cpu.system) / 1000 / ms) * 100).toFixed(0)}% of one core, ${Math.round((cpu.user + cpu.system) / events)} µs per delivery (${threadCpuPer(threads0, threadCpu(), events)})`);
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
