// The head stream hands a run of blocks' events to the deliverer in several Enqueue calls (matcher/enqueue-batch.ts).
// Two calls of one run fail — one before the deliverer saw it, one after the deliverer committed it (its answer lost)
// — while the calls around them were accepted: the checkpoint must stay, the run is matched again, and every
// transfer that touched a watched address ends with exactly one event. The fault is injected in the transport; the
// deliverer, registry, PostgreSQL, Redis and node (tools/tron-sim) are the real ones.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Code, ConnectError, type Transport } from "@connectrpc/connect";
import { loadConfig } from "../../../common/config.ts";
import { inProcessTransport } from "../../../common/rpc.ts";
import { decodeBlock } from "../../../matcher/decode.ts";
import { createMatcher, type MatcherHandle } from "../../../matcher/index.ts";
import { tryAcquireChainLease } from "../../../matcher/lease.ts";
import { advanceCheckpoint, loadCheckpoint, openMatcherDatabase, type MatcherDb } from "../../../matcher/store.ts";
import { startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";

const CHAIN = "tron:mainnet" as const;
let t: MatcherBed;
let db: MatcherDb;
let matcher: MatcherHandle | undefined;

beforeAll(async () => {
  t = await startMatcherBed({ chains: [CHAIN], matcher: false, sim: { txPerBlock: 40, poolSize: 60, recorded: false, startNumber: 42_000_000 } });
  db = await openMatcherDatabase(t.bed.env.DATABASE_URL!);
});
afterAll(async () => {
  await matcher?.close();
  await db?.$client.close();
  await t?.stop();
});

test("an Enqueue call of a run fails (before and after the deliverer committed it) → the run is matched again; no event lost or doubled", async () => {
  const sim = t.sims[CHAIN]!;
  const sub = await t.subscribe("/batch");
  const watched = sim.poolAddresses(30);
  await t.watch(sub, CHAIN, watched);

  // The checkpoint at the current head, then a backlog the stream catches up over as one run.
  const start = sim.chain.head().block;
  const lease = (await tryAcquireChainLease(db.$client, CHAIN))!;
  await advanceCheckpoint(lease, [{ number: start.block_header.raw_data.number, blockId: start.blockID }]);
  await lease.release();
  sim.produce(12);
  const head = sim.chain.head().block.block_header.raw_data.number;

  const real = inProcessTransport(t.bed.deliverer!.routes);
  let enqueueCalls = 0;
  const injected: string[] = [];
  const faulty: Transport = {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      if (method.name !== "Enqueue" || (input as { events: unknown[] }).events.length === 0) {
        return real.unary(method, signal, timeoutMs, header, input, contextValues);
      }
      const call = ++enqueueCalls;
      if (call === 2) {
        injected.push("before");
        throw new ConnectError("injected: the deliverer is unreachable", Code.Unavailable);
      }
      const res = await real.unary(method, signal, timeoutMs, header, input, contextValues);
      if (call === 4) {
        injected.push("after");
        throw new ConnectError("injected: the answer was lost", Code.Unavailable);
      }
      return res;
    },
    stream: (...args) => real.stream(...args),
  };
  matcher = await createMatcher(loadConfig(t.bed.env), {
    deliverer: faulty,
    nodeUrls: { [CHAIN]: sim.url },
    // Few events per call, so one run makes several calls; the head stream alone, so the call count is its own.
    stream: { leaseRetryMs: 100, solidified: false, enqueueEvents: 10 },
  });
  await matcher.waitForBlock(CHAIN, head, 60_000);
  expect(injected).toEqual(["before", "after"]);
  expect((await loadCheckpoint(db, CHAIN))!.number).toBe(head);

  // Independently of the stream: every successful, non-zero transfer of the backlog touching a watched address.
  const watchedSet = new Set(watched);
  const expected = new Set<string>();
  for (let n = start.block_header.raw_data.number + 1; n <= head; n++) {
    const stored = sim.chain.byNumber(n)!;
    for (const tr of decodeBlock(stored.block, stored.infos)) {
      if (tr.result !== "SUCCESS" || tr.amount === "0") continue;
      if (watchedSet.has(tr.from) || watchedSet.has(tr.to)) expected.add(`${tr.txId}:${tr.logIndex}:${tr.internalIndex}`);
    }
  }
  // More than a few calls' worth, so the failures fell inside the run.
  expect(expected.size).toBeGreaterThan(50);

  const events = await t.events(sub);
  const keys = events.map((e) => {
    const p = JSON.parse(e.payloadJson) as { data: { txId: string; logIndex: number; internalIndex: number } };
    return `${p.data.txId}:${p.data.logIndex}:${p.data.internalIndex}`;
  });
  expect(new Set(keys).size).toBe(keys.length); // none doubled
  expect(new Set(keys)).toEqual(expected); // none missed, none extra
}, 90_000);
