// `bun run bench backfill`: the history scanner's rate beside the live streams' and the node's, and what a backfill
// does to live latency, all in one run.
//
// tools/tron-sim (its own process) holds a backlog of BENCH_BACKFILL_BLOCKS generated mainnet-like blocks (300
// transactions each, ~45% USDT, a 20,000-address pool, prerendered); one subscription watches BENCH_WATCHED addresses
// (default 1,000,000; 4,000 of them from the pool, as in `bench matcher`), delivered to a verifying HTTPS receiver.
// The stack (registry, deliverer, matcher) runs in this process.
// 1. Floor: the simulator's own rate of serving the range the way the scanner asks for it (getblockbylimitnext of
//    100, then each block's transaction infos, BACKFILL_NODE_CONCURRENCY in flight), nothing decoded or matched.
// 2. Live catch-up: both streams from checkpoints at the range's start to the solidified head: blocks/s.
// 3. Backfill: a job over the same range (every event it finds exists from 2, so each is matched, sent and
//    answered as a duplicate — the deliverer's dedupe is part of the cost): blocks/s, and its ratio to 2 (goal ≥ 0.8×)
//    and to 1.
// 4. Latency: a block every 3 s with a transfer to a watched address, block timestamp to the signed POST, first
//    idle (BENCH_LATENCY_BLOCKS blocks), then while a second backfill over the range runs: p50 / p99 of both
//    (goal: p99 during ≤ 1.5 s).
//
// Environment: BENCH_BACKFILL_BLOCKS (default 1000; the 100,000 × 300 transactions is more than the simulator
// holds in memory on this machine: it keeps every block and its rendered JSON), BENCH_WATCHED (1000000),
// BENCH_LATENCY_BLOCKS (15), BACKFILL_NODE_CONCURRENCY (2).
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { createClient, type HandlerContext } from "@connectrpc/connect";
import { inProcessTransport } from "../common/rpc.ts";
import { setLogLevel } from "../common/logger.ts";
import { hexToBase58 } from "../common/tron-address.ts";
import { CreateBackfillRequestSchema } from "../gen/webhooks/registry/v1/backfill_pb.ts";
import { SubscriptionService } from "../gen/webhooks/registry/v1/registry_pb.ts";
import { createMatcher, type MatcherHandle } from "../matcher/index.ts";
import { tryAcquireChainLease } from "../matcher/lease.ts";
import { fetchDecodedRange, infosFor, mapLimit } from "../matcher/fetch.ts";
import { advanceCheckpoint, advanceSolidifiedCheckpoint, openMatcherDatabase } from "../matcher/store.ts";
import { TronClient } from "../common/tron-node/client.ts";
import { NodeChainView } from "../registry/backfill-range.ts";
import { backfillService } from "../registry/backfills.ts";
import { startStack } from "../test/support/stack.ts";
import { createTestPki } from "../tools/receiver/certs.ts";
import { startReceiver } from "../tools/receiver/server.ts";
import { startSimProcess } from "./sim-process.ts";

const ROOT = join(import.meta.dir, "..");
const CHAIN = "tron:mainnet" as const;
const BLOCKS = Number(process.env.BENCH_BACKFILL_BLOCKS ?? 1_000);
const WATCHED = Number(process.env.BENCH_WATCHED ?? 1_000_000);
const LATENCY_BLOCKS = Number(process.env.BENCH_LATENCY_BLOCKS ?? 15);
const NODE_CONCURRENCY = Number(process.env.BACKFILL_NODE_CONCURRENCY ?? 2);
const POOL = 20_000;
const POOL_WATCHED = 4_000;
const KINDS = ["wallet.transfer.broadcasted", "wallet.transfer.confirmed", "wallet.transfer.failed"];

function pct(sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function simJson<T>(url: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${url}${path}`, body === undefined ? {} : { method: "POST", body: JSON.stringify(body) });
  return (await res.json()) as T;
}

export default async function benchBackfill(): Promise<void> {
  setLogLevel("warn");
  console.log(`backfill benchmark: ${BLOCKS} blocks × 300 tx, ${WATCHED.toLocaleString()} watched addresses, BACKFILL_NODE_CONCURRENCY ${NODE_CONCURRENCY}`);
  const simStarted = performance.now();
  const sim = await startSimProcess(["--port", "0", "--block-ms", "0", "--tx", "300", "--usdt", "0.45", "--pool", String(POOL), "--backlog", String(BLOCKS), "--no-recorded", "--prerender", "--seed", "5"]);
  console.log(`  simulator ready in ${((performance.now() - simStarted) / 1000).toFixed(1)} s`);
  const pki = createTestPki();
  const receiver = await startReceiver({ cert: pki.cert, key: pki.key });
  const stack = await startStack({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.1/32",
      DELIVERY_CA_FILE: pki.caFile,
      MATCHER_CHAINS: CHAIN,
      LOG_LEVEL: "warn",
      DATABASE_POOL_MAX: "20",
      BACKFILL_NODE_CONCURRENCY: String(NODE_CONCURRENCY),
    },
    deliverer: true,
    nodeUrls: { [CHAIN]: sim.url },
  });
  let matcher: MatcherHandle | undefined;
  try {
    const subs = createClient(SubscriptionService, inProcessTransport(stack.registry.routes, "gateway"));
    const key = await stack.createKey({ name: "bench" });
    const keyId = key.id;
    const sub = (await subs.createSubscription({ keyId, destination: { type: "https", url: receiver.url("/bulk") }, events: KINDS, status: "", description: "" })).subscription!;
    const lat = (await subs.createSubscription({ keyId, destination: { type: "https", url: receiver.url("/latency") }, events: ["wallet.transfer.broadcasted"], status: "", description: "" })).subscription!;
    const pool = (await simJson<{ addresses: string[] }>(sim.url, `/sim/addresses?limit=${POOL}`)).addresses;
    const setup = performance.now();
    for (let i = 0; i < WATCHED; i += 10_000) {
      const add = [];
      for (let j = i; j < Math.min(WATCHED, i + 10_000); j++) {
        add.push({ chainId: CHAIN, address: j < POOL_WATCHED ? pool[j * Math.floor(POOL / POOL_WATCHED)]! : hexToBase58(`41${randomBytes(20).toString("hex")}`) });
      }
      await subs.patchAddresses({ keyId, id: sub.id, add });
    }
    const latencyWallet = hexToBase58(`41${randomBytes(20).toString("hex")}`);
    await subs.patchAddresses({ keyId, id: lat.id, add: [{ chainId: CHAIN, address: latencyWallet }] });
    console.log(`  ${WATCHED.toLocaleString()} addresses watched in ${((performance.now() - setup) / 1000).toFixed(1)} s`);

    const state = await simJson<{ head: { number: number }; solid: { number: number }; first: { number: number } }>(sim.url, "/sim/state");
    const from = state.first.number + 1;
    const to = state.solid.number;
    const blocks = to - from + 1;

    // --- 1. the floor: the simulator serving the range as the scanner asks for it
    const client = new TronClient({ baseUrl: sim.url });
    let t0 = performance.now();
    for (let n = from; n <= to; n += 100) {
      const raw = await client.getBlockRange(n, Math.min(to + 1, n + 100));
      await mapLimit(raw, NODE_CONCURRENCY, (b) => infosFor(client, b));
    }
    const floor = blocks / ((performance.now() - t0) / 1000);
    // And what decoding adds, still without the index or the deliverer.
    t0 = performance.now();
    for (let n = from; n <= to; n += 100) await fetchDecodedRange(client, n, Math.min(to + 1, n + 100), NODE_CONCURRENCY, { chainId: CHAIN, blacklistContracts: new Set() });
    const decodedRate = blocks / ((performance.now() - t0) / 1000);
    // Each figure is printed as soon as it is measured: a later phase that fails keeps the earlier ones.
    console.log(`range: blocks ${from}..${to} (${blocks})`);
    console.log(`  simulator serving them (range + infos, ${NODE_CONCURRENCY} in flight)   ${floor.toFixed(0).padStart(6)} blocks/s   (the floor; decoded too: ${decodedRate.toFixed(0)} blocks/s)`);

    // --- 2. live catch-up over the same blocks: both streams from checkpoints at the range's start
    const firstBlock = (await client.getBlockHeader(from - 1))!;
    const mdb = await openMatcherDatabase(stack.config.databaseUrl, { max: 2 });
    const lease = (await tryAcquireChainLease(mdb.$client, CHAIN))!;
    const ref = { number: from - 1, blockId: firstBlock.blockID };
    await advanceCheckpoint(lease, [ref]);
    await advanceSolidifiedCheckpoint(lease, ref, []);
    await lease.release();
    await mdb.$client.close();
    t0 = performance.now();
    matcher = await createMatcher(stack.config, { deliverer: inProcessTransport(stack.deliverer!.routes, "matcher"), nodeUrls: { [CHAIN]: sim.url } });
    await matcher.waitForSolidified(CHAIN, to, 1_800_000);
    const live = blocks / ((performance.now() - t0) / 1000);
    console.log(`  live catch-up (head + solidified streams)                  ${live.toFixed(0).padStart(6)} blocks/s`);

    // --- 3. a backfill over the same range
    const svc = backfillService({
      store: stack.registry.store,
      tokenKeys: stack.registry.keyring.tokenKeys,
      chains: new NodeChainView(stack.config, { [CHAIN]: sim.url }),
      limits: stack.config.backfill,
    });
    const runJob = async () => {
      const res = (await svc.createBackfill(
        create(CreateBackfillRequestSchema, { keyId, subscriptionId: sub.id, chainId: CHAIN, fromBlock: BigInt(from), toBlock: BigInt(to) }),
        {} as HandlerContext,
      )) as { backfill?: { id: string } };
      return res.backfill!.id;
    };
    const jobRow = async (id: string) =>
      ((await stack.registry.store.db.$client`SELECT status, started_at, finished_at, events_created, events_skipped FROM backfills WHERE id = ${id}`) as {
        status: string;
        started_at: Date | null;
        finished_at: Date | null;
        events_created: string;
        events_skipped: string;
      }[])[0]!;
    const waitDone = async (id: string) => {
      for (;;) {
        const r = await jobRow(id);
        if (r.status !== "queued" && r.status !== "running") return r;
        await Bun.sleep(100);
      }
    };
    const job = await runJob();
    const done = await waitDone(job);
    const scanSeconds = (done.finished_at!.getTime() - done.started_at!.getTime()) / 1000;
    const backfill = blocks / scanSeconds;
    console.log(`  backfill                                                   ${backfill.toFixed(0).padStart(6)} blocks/s   ${(backfill / live).toFixed(2)}× the live catch-up (goal ≥ 0.8×), ${(backfill / floor).toFixed(2)}× the floor`);
    console.log(`    events made ${done.events_created}, skipped ${done.events_skipped} (the catch-up made them all)`);

    // --- 4. latency, idle and during a backfill
    const latencyRun = async (count: number, during?: () => Promise<boolean>) => {
      const out: number[] = [];
      for (let i = 0; i < count; i++) {
        const before = receiver.deliveries("/latency").length;
        await simJson(sim.url, "/sim/transfers", { transfers: [{ type: "trx", from: pool[0], to: latencyWallet, amount: 1_000 + i }], produce: true });
        const deadline = Date.now() + 30_000;
        while (receiver.deliveries("/latency").length === before && Date.now() < deadline) await Bun.sleep(5);
        const d = receiver.deliveries("/latency")[before];
        // The block's timestamp is the moment the simulator made it.
        if (d) out.push(d.receivedAt - (JSON.parse(d.body) as { data: { blockTimestamp: number } }).data.blockTimestamp);
        if (during && !(await during())) break;
        await Bun.sleep(3_000);
      }
      return out.sort((a, b) => a - b);
    };
    // Idle means idle: the catch-up's deliveries drained first (they would be the latency measured otherwise).
    for (const until = Date.now() + 600_000; Date.now() < until; await Bun.sleep(1_000)) {
      const [row] = (await stack.registry.store.db.$client`SELECT count(*)::int AS n FROM event_deliveries WHERE status = 'pending'`) as { n: number }[];
      if ((row?.n ?? 0) === 0) break;
    }
    const idle = await latencyRun(LATENCY_BLOCKS);
    const second = await runJob();
    const busy = await latencyRun(LATENCY_BLOCKS, async () => ["queued", "running"].includes((await jobRow(second)).status));
    const secondRow = await waitDone(second);

    console.log(`  live block-to-webhook latency idle            p50 ${pct(idle, 50)} ms  p99 ${pct(idle, 99)} ms  (${idle.length} blocks)`);
    console.log(`  ... during a backfill                         p50 ${pct(busy, 50)} ms  p99 ${pct(busy, 99)} ms  (${busy.length} blocks; goal p99 ≤ 1,500 ms; the job ${secondRow.status})`);
  } finally {
    await matcher?.close().catch(() => {});
    await stack.stop();
    await receiver.close();
    sim.proc.kill(9);
  }
}
