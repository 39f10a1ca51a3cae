// The history scanner on its own (matcher/backfill/scanner.ts) against tools/tron-sim and the real registry and
// deliverer: it scans nothing while the live streams are behind, and never has more than BACKFILL_NODE_CONCURRENCY
// history requests in flight on the chain.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { loadBackfillConfig } from "../../../common/backfill-config.ts";
import { log } from "../../../common/logger.ts";
import { openRedis, type Redis } from "../../../common/redis.ts";
import { WatchIndexReader } from "../../../common/watch-index/reader.ts";
import { CreateBackfillRequestSchema } from "../../../gen/webhooks/registry/v1/backfill_pb.ts";
import { BackfillScanner } from "../../../matcher/backfill/scanner.ts";
import { openMatcherDatabase, type MatcherDb } from "../../../matcher/store.ts";
import { TronClient } from "../../../common/tron-node/client.ts";
import { NodeChainView } from "../../../registry/backfill-range.ts";
import { backfillService } from "../../../registry/backfills.ts";
import { until } from "../../support/wait.ts";
import { startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";

const CHAIN = "tron:nile" as const;
const A = "TPH479jG91GcRbPr4pnx7bwdN47twUvuy8";
const START = 32_000_000;

let t: MatcherBed;
let db: MatcherDb;
let redis: Redis;

beforeAll(async () => {
  t = await startMatcherBed({
    chains: [CHAIN],
    matcher: false,
    sim: { recorded: false, startNumber: START, backlog: 300, txPerBlock: 10, history: { to: [A], every: 4 } },
  });
  db = await openMatcherDatabase(t.bed.env.DATABASE_URL!, { max: 3 });
  redis = openRedis(t.bed.config.redisUrl);
});
afterAll(async () => {
  redis?.disconnect();
  await db?.$client.close();
  await t?.stop();
});

test("no run while the live streams are behind; at most BACKFILL_NODE_CONCURRENCY history requests in flight", async () => {
  const sim = t.sims[CHAIN]!;
  const sub = await t.subscribe("/scanner", { chains: [CHAIN], events: ["wallet.transfer.confirmed"] });
  await t.watch(sub, CHAIN, [A]);
  const svc = backfillService({
    store: t.bed.registry.store,
    tokenKeys: t.bed.registry.keyring.tokenKeys,
    chains: new NodeChainView(t.bed.config, { [CHAIN]: sim.url }),
    limits: loadBackfillConfig({}),
  });
  const res = (await svc.createBackfill(
    create(CreateBackfillRequestSchema, { keyId: sub.keyId, subscriptionId: sub.subscriptionId, chainId: CHAIN, fromBlock: BigInt(START + 1) }),
    {} as HandlerContext,
  )) as { backfill?: { id: string; toBlock: bigint } };
  const job = res.backfill!;

  let inFlight = 0;
  let most = 0;
  const counting: typeof fetch = Object.assign(
    async (input: string | URL | Request, init?: RequestInit) => {
      most = Math.max(most, ++inFlight);
      try {
        return await fetch(input, init);
      } finally {
        inFlight--;
      }
    },
    { preconnect: fetch.preconnect },
  );
  const index = new WatchIndexReader(redis, db, { prefix: t.bed.config.redisPrefix, shards: t.bed.config.watchIndexShards });
  let behind = true;
  const scanner = new BackfillScanner({
    chainId: CHAIN,
    client: new TronClient({ baseUrl: sim.url, fetch: counting }),
    activity: { chainId: CHAIN, blacklistContracts: new Set() },
    db,
    lookup: (chainId, addresses) => index.lookup(chainId, addresses),
    enqueue: (events) => t.bed.delivery.enqueue({ events }),
    log,
    nodeConcurrency: 2,
    perKey: 2,
    liveLag: () => (behind ? 5 : 0),
    pollMs: 100,
  });
  const stop = new AbortController();
  const running = scanner.run(stop.signal);
  try {
    const row = async () =>
      ((await t.bed.sql`SELECT status, next_block FROM backfills WHERE id = ${job.id}`) as { status: string; next_block: string }[])[0]!;
    await until("the job claimed", async () => (await row()).status === "running");
    const ranges = sim.served("wallet/getblockbylimitnext");
    await Bun.sleep(1_500);
    // Claimed, but not one block read while the live streams are behind.
    expect(Number((await row()).next_block)).toBe(START + 1);
    expect(sim.served("wallet/getblockbylimitnext")).toBe(ranges);
    behind = false;
    await until("the job to complete", async () => (await row()).status === "completed", 60_000);
    expect(most).toBeLessThanOrEqual(2);
    expect(most).toBeGreaterThan(0);
    const want = sim.chain.history.filter((h) => h.blockNumber > START && h.blockNumber <= Number(job.toBlock));
    expect(await t.events(sub)).toHaveLength(want.length);
  } finally {
    stop.abort();
    await running;
  }
});
