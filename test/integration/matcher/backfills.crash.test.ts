// A backfill run by the matcher as its own process (`bun matcher/main.ts`), SIGKILLed twice mid-job and started
// again: the job resumes from its checkpoint in PostgreSQL and completes, and every past transfer to the watched
// addresses has exactly one event of each kind — none missed, none doubled.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { loadBackfillConfig } from "../../../common/backfill-config.ts";
import { CreateBackfillRequestSchema } from "../../../gen/webhooks/registry/v1/backfill_pb.ts";
import { NodeChainView } from "../../../registry/backfill-range.ts";
import { backfillService } from "../../../registry/backfills.ts";
import { until } from "../../support/wait.ts";
import type { MatcherBed } from "../../support/matcher-bed.ts";
import { startMatcherProcessBed, type MatcherProcessBed } from "../../support/matcher-process.ts";

const CHAIN = "tron:nile" as const;
const A = "TPH479jG91GcRbPr4pnx7bwdN47twUvuy8";
const B = "TYCrwuKFKhLsbuSY5Jpwd8LYdq6QU8d9J5";
const START = 31_000_000;

let p: MatcherProcessBed;
let t: MatcherBed;

beforeAll(async () => {
  p = await startMatcherProcessBed(CHAIN, {
    sim: { recorded: false, startNumber: START, backlog: 600, txPerBlock: 10, history: { to: [A, B], every: 3 } },
    env: { BACKFILL_NODE_CONCURRENCY: "1" },
  });
  t = p.t;
});
afterAll(async () => {
  await p?.stop();
});

const nextBlock = async (id: string) =>
  ((await t.bed.sql`SELECT status, next_block FROM backfills WHERE id = ${id}`) as { status: string; next_block: string }[])[0]!;

test("SIGKILLed twice mid-job: it resumes from its checkpoint and every event is made once", async () => {
  const sim = t.sims[CHAIN]!;
  const sub = await t.subscribe("/crash", { chains: [CHAIN], events: ["wallet.transfer.broadcasted", "wallet.transfer.confirmed"] });
  await t.watch(sub, CHAIN, [A, B]);
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
  const to = Number(job.toBlock);
  // Slow enough that the kills land mid-job.
  sim.setFaults([{ path: "wallet/gettransactioninfobyblocknum", delayMs: 15 }]);

  let proc = p.spawn();
  for (const mark of [START + 120, START + 320]) {
    await until(`the job past block ${mark}`, async () => Number((await nextBlock(job.id)).next_block) > mark, 90_000, 20);
    await Bun.sleep(Math.floor(Math.random() * 200));
    proc.kill("SIGKILL");
    await proc.exited;
    expect((await nextBlock(job.id)).status).toBe("running");
    proc = p.spawn();
  }
  sim.setFaults([]);
  await until("the job to complete", async () => (await nextBlock(job.id)).status === "completed", 90_000, 100);
  proc.kill("SIGTERM");
  await proc.exited;

  const want = sim.chain.history.filter((h) => h.blockNumber > START && h.blockNumber <= to);
  expect(want.length).toBeGreaterThan(300);
  const got = (await t.events(sub)).map((e) => JSON.parse(e.payloadJson) as { kind: string; data: { txId: string; backfill: string } });
  const keys = got.map((e) => `${e.kind} ${e.data.txId}`);
  expect(new Set(keys).size).toBe(keys.length);
  expect(keys.sort()).toEqual(want.flatMap((h) => [`wallet.transfer.broadcasted ${h.txId}`, `wallet.transfer.confirmed ${h.txId}`]).sort());
  for (const e of got) expect(e.data.backfill).toBe(job.id);
}, 240_000);
