// Backfill jobs run by the real matcher against tools/tron-sim's history (transfers to chosen addresses in past
// blocks), with the real registry, deliverer and verifying receiver: ranges by block and by time, a subset of
// addresses, match conditions, dedupe against live events in both orders, two overlapping jobs reading each block
// once (counted at the simulator), cancel mid-run.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { CreateBackfillRequestSchema, CancelBackfillRequestSchema } from "../../../gen/webhooks/registry/v1/backfill_pb.ts";
import type { EventView } from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { loadBackfillConfig } from "../../../common/backfill-config.ts";
import { NodeChainView } from "../../../registry/backfill-range.ts";
import { backfillService } from "../../../registry/backfills.ts";
import { until } from "../../support/wait.ts";
import { startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";

const CHAIN = "tron:nile" as const;
const A = "TPH479jG91GcRbPr4pnx7bwdN47twUvuy8";
const B = "TYCrwuKFKhLsbuSY5Jpwd8LYdq6QU8d9J5";
const START = 30_000_000;
const KINDS = ["wallet.transfer.broadcasted", "wallet.transfer.confirmed", "wallet.transfer.failed"];

let t: MatcherBed;
let svc: ReturnType<typeof backfillService>;
const ctx = {} as HandlerContext;

beforeAll(async () => {
  t = await startMatcherBed({
    chains: [CHAIN],
    sim: { recorded: false, startNumber: START, backlog: 300, txPerBlock: 10, history: { to: [A, B], every: 5 } },
    env: { BACKFILL_NODE_CONCURRENCY: "1" },
  });
  const sim = t.sims[CHAIN]!;
  svc = backfillService({
    store: t.bed.registry.store,
    tokenKeys: t.bed.registry.keyring.tokenKeys,
    chains: new NodeChainView(t.bed.config, { [CHAIN]: sim.url }),
    limits: loadBackfillConfig({}),
  });
});
afterAll(async () => {
  await t?.stop();
});

type Sub = { keyId: string; subscriptionId: string };
type Payload = { kind: string; data: Record<string, unknown> & { txId: string; backfill: string | null } };

async function subscribe(path: string, opts: Parameters<MatcherBed["subscribe"]>[1] = {}): Promise<Sub> {
  const sub = await t.subscribe(path, { chains: [CHAIN], events: KINDS, ...opts });
  await t.watch(sub, CHAIN, [A, B]);
  return sub;
}

async function backfill(sub: Sub, range: { fromBlock?: number; toBlock?: number; sinceMs?: number; untilMs?: number; addresses?: string[] }): Promise<{ id: string; fromBlock: bigint; toBlock: bigint; addresses: number }> {
  const res = (await svc.createBackfill(
    create(CreateBackfillRequestSchema, {
      keyId: sub.keyId,
      subscriptionId: sub.subscriptionId,
      chainId: CHAIN,
      fromBlock: range.fromBlock === undefined ? undefined : BigInt(range.fromBlock),
      toBlock: range.toBlock === undefined ? undefined : BigInt(range.toBlock),
      sinceMs: range.sinceMs === undefined ? undefined : BigInt(range.sinceMs),
      untilMs: range.untilMs === undefined ? undefined : BigInt(range.untilMs),
      addressesGiven: range.addresses !== undefined,
      addresses: range.addresses ?? [],
    }),
    ctx,
  )) as { backfill?: { id: string; fromBlock: bigint; toBlock: bigint; addresses: number } };
  return res.backfill!;
}

interface JobState {
  status: string;
  next_block: string;
  events_created: string;
  events_skipped: string;
}
async function job(id: string): Promise<JobState> {
  const [row] = (await t.bed.sql`SELECT status, next_block, events_created, events_skipped FROM backfills WHERE id = ${id}`) as JobState[];
  return row!;
}
const finished = (id: string) => until(`backfill ${id} to finish`, async () => ((await job(id)).status === "completed" ? job(id) : null), 60_000, 100);

async function payloads(sub: Sub): Promise<Payload[]> {
  return (await t.events(sub)).map((e: EventView) => JSON.parse(e.payloadJson) as Payload);
}

/** The history transfers in [from, to] to the given addresses. */
function history(from: number, to: number, addresses = [A, B], type?: "trx" | "trc20") {
  return t.sims[CHAIN]!.chain.history.filter((h) => h.blockNumber >= from && h.blockNumber <= to && addresses.includes(h.to) && (!type || h.type === type));
}

describe("backfills run by the matcher", () => {
  test("by block: broadcasted and confirmed for every past transfer, data.backfill = the job, oldest block first", async () => {
    const sub = await subscribe("/by-block");
    const from = START + 1;
    const to = START + 150;
    const bf = await backfill(sub, { fromBlock: from, toBlock: to });
    const done = await finished(bf.id);
    const want = history(from, to);
    expect(want.length).toBeGreaterThan(20);
    const got = await payloads(sub);
    expect(got).toHaveLength(want.length * 2);
    expect(Number(done.events_created)).toBe(want.length * 2);
    expect(Number(done.events_skipped)).toBe(0);
    expect(Number(done.next_block)).toBe(to + 1);
    for (const p of got) {
      expect(p.data.backfill).toBe(bf.id);
      expect(["wallet.transfer.broadcasted", "wallet.transfer.confirmed"]).toContain(p.kind);
      if (p.kind === "wallet.transfer.confirmed") expect(p.data.solidifiedBlockNumber as number).toBeGreaterThanOrEqual(to);
    }
    expect(new Set(got.map((p) => p.data.txId))).toEqual(new Set(want.map((h) => h.txId)));
    // Made oldest block first: the events' ids (ULIDs, minted in the order they were enqueued) follow the blocks.
    const events = await t.events(sub);
    const byId = [...events].sort((x, y) => (x.id < y.id ? -1 : 1)).map((e) => (JSON.parse(e.payloadJson) as Payload).data.blockNumber as number);
    expect(byId).toEqual([...byId].sort((x, y) => x - y));
    await t.bed.receiver.waitForCount("/by-block", want.length * 2);
    for (const d of t.bed.receiver.deliveries("/by-block")) expect(d.verified).toBe(true);
  });

  test("by time, a subset of addresses, and the match conditions applied", async () => {
    const sub = await subscribe("/subset", { match: { assets: { items: [{ standard: "TRX" }] } } });
    const fromBlock = t.sims[CHAIN]!.chain.byNumber(START + 100)!.block.block_header.raw_data;
    const toBlock = t.sims[CHAIN]!.chain.byNumber(START + 200)!.block.block_header.raw_data;
    const bf = await backfill(sub, { sinceMs: fromBlock.timestamp - 500, untilMs: toBlock.timestamp + 500, addresses: [B] });
    expect([Number(bf.fromBlock), Number(bf.toBlock), bf.addresses]).toEqual([START + 100, START + 200, 1]);
    await finished(bf.id);
    const want = history(START + 100, START + 200, [B], "trx");
    expect(want.length).toBeGreaterThan(3);
    const got = await payloads(sub);
    expect(got).toHaveLength(want.length * 2);
    for (const p of got) {
      expect(p.data.to).toBe(B);
      expect((p.data.asset as { standard: string }).standard).toBe("TRX");
    }
  });

  test("two overlapping jobs read each block once (counted at the simulator) and both get their events", async () => {
    const sim = t.sims[CHAIN]!;
    const one = await subscribe("/overlap-1");
    const two = await subscribe("/overlap-2");
    // The scanner takes both before it starts: it is made to wait while the jobs are created.
    sim.setFaults([{ path: "wallet/getblockbylimitnext", delayMs: 1_500, times: 1 }]);
    const ranges = before();
    const a = await backfill(one, { fromBlock: START + 201, toBlock: START + 260 });
    const b = await backfill(two, { fromBlock: START + 221, toBlock: START + 280 });
    await Promise.all([finished(a.id), finished(b.id)]);
    const after = before();
    // Blocks START+201..280 (80): one range call and one transaction-info call per block that needs one, at most.
    const infos = after.infos - ranges.infos;
    expect(after.ranges - ranges.ranges).toBeLessThanOrEqual(2);
    expect(infos).toBeLessThanOrEqual(80);
    expect(await payloads(one)).toHaveLength(history(START + 201, START + 260).length * 2);
    expect(await payloads(two)).toHaveLength(history(START + 221, START + 280).length * 2);

    function before() {
      return { ranges: sim.served("wallet/getblockbylimitnext"), infos: sim.served("wallet/gettransactioninfobyblocknum") };
    }
  });

  test("dedupe: events the subscription already has are skipped, and a live event after the backfill is not made again", async () => {
    const sub = await subscribe("/dedupe");
    const first = await backfill(sub, { fromBlock: START + 1, toBlock: START + 40 });
    await finished(first.id);
    const made = (await payloads(sub)).length;
    expect(made).toBe(history(START + 1, START + 40).length * 2);
    // The same range again: every event exists already.
    const again = await backfill(sub, { fromBlock: START + 1, toBlock: START + 40 });
    const done = await finished(again.id);
    expect([Number(done.events_created), Number(done.events_skipped)]).toEqual([0, made]);
    expect(await payloads(sub)).toHaveLength(made);
    // A live stream's event for a transfer the backfill made: the deliverer answers the existing event.
    const existing = (await t.events(sub))[0]!;
    const p = JSON.parse(existing.payloadJson) as Payload;
    const h = t.sims[CHAIN]!.chain.history.find((x) => x.txId === p.data.txId)!;
    const res = await t.bed.delivery.enqueue({
      events: [
        {
          subscriptionId: sub.subscriptionId,
          kind: p.kind,
          transfer: {
            chainId: CHAIN,
            blockNumber: BigInt(h.blockNumber),
            blockHash: p.data.blockHash as string,
            blockTimestampMs: BigInt(h.timestampMs),
            txId: h.txId,
            logIndex: p.data.logIndex as number,
            internalIndex: -1,
            from: p.data.from as string,
            to: p.data.to as string,
            amount: p.data.amount as string,
            fee: "0",
            solidifiedBlockNumber: 1n,
          },
        },
      ],
    });
    expect(res.eventIds).toEqual([existing.id]);
    expect(res.made).toEqual([false]);
    expect(await payloads(sub)).toHaveLength(made);
  });

  test("live events first: a backfill over blocks the live streams matched skips them", async () => {
    const sim = t.sims[CHAIN]!;
    const sub = await subscribe("/live-first");
    // A new block with a transfer to A, matched live (broadcasted, then confirmed once solidified).
    const ids = sim.chain.enqueue([{ type: "trx", from: B, to: A, amount: 5_000_000 }]);
    const [stored] = sim.produce(1);
    const n = stored!.block.block_header.raw_data.number;
    sim.produce(20);
    await t.matcher!.waitForSolidified(CHAIN, n, 30_000);
    const live = await until("the live events", async () => {
      const got = (await payloads(sub)).filter((p) => p.data.txId === ids[0]);
      return got.length === 2 ? got : null;
    });
    for (const p of live) expect(p.data.backfill).toBeNull();
    const bf = await backfill(sub, { fromBlock: n, toBlock: n });
    const done = await finished(bf.id);
    // B → A touches both watched addresses: one event per kind, already made live.
    expect([Number(done.events_created), Number(done.events_skipped)]).toEqual([0, 2]);
    expect((await payloads(sub)).filter((p) => p.data.txId === ids[0])).toHaveLength(2);
  });

  test("cancel mid-run: the job stops where it was", async () => {
    const sim = t.sims[CHAIN]!;
    const sub = await subscribe("/cancel");
    sim.setFaults([{ path: "wallet/gettransactioninfobyblocknum", delayMs: 200 }]);
    try {
      const bf = await backfill(sub, { fromBlock: START + 1, toBlock: START + 280 });
      await until("the job to scan a run", async () => Number((await job(bf.id)).next_block) > START + 1, 60_000, 50);
      const canceled = (await svc.cancelBackfill(create(CancelBackfillRequestSchema, { keyId: sub.keyId, subscriptionId: sub.subscriptionId, id: bf.id }), ctx)) as {
        backfill?: { status: string };
      };
      expect(canceled.backfill!.status).toBe("canceled");
      const at = Number((await job(bf.id)).next_block);
      await Bun.sleep(3_000);
      const later = await job(bf.id);
      expect(later.status).toBe("canceled");
      expect(Number(later.next_block)).toBe(at);
      expect(at).toBeLessThan(START + 281);
    } finally {
      sim.setFaults([]);
    }
  });

  test("at most BACKFILL_CONCURRENCY_PER_KEY (2) jobs of a key run at once; disabling the subscription cancels them", async () => {
    const sim = t.sims[CHAIN]!;
    const sub = await subscribe("/per-key");
    sim.setFaults([{ path: "wallet/gettransactioninfobyblocknum", delayMs: 100 }]);
    try {
      const jobs: { id: string }[] = [];
      for (let i = 0; i < 3; i++) jobs.push(await backfill(sub, { fromBlock: START + 1 + i, toBlock: START + 280 }));
      const statuses = async () => Promise.all(jobs.map(async (j) => (await job(j.id)).status));
      await until("two jobs running", async () => (await statuses()).filter((s) => s === "running").length === 2, 30_000, 50);
      for (let i = 0; i < 10; i++) {
        expect((await statuses()).sort()).toEqual(["queued", "running", "running"]);
        await Bun.sleep(100);
      }
      await t.bed.subscriptions.updateSubscription({
        keyId: sub.keyId,
        id: sub.subscriptionId,
        destination: { type: "https", url: t.bed.receiver.url("/per-key") },
        events: KINDS,
        status: "disabled",
        description: "",
      });
      const rows = (await t.bed.sql`SELECT status, error FROM backfills WHERE subscription_id = ${sub.subscriptionId}`) as { status: string; error: string }[];
      expect(rows).toEqual(jobs.map(() => ({ status: "canceled", error: "subscription disabled" })));
      const at = await Promise.all(jobs.map(async (j) => (await job(j.id)).next_block));
      await Bun.sleep(2_000);
      expect(await Promise.all(jobs.map(async (j) => (await job(j.id)).next_block))).toEqual(at);
    } finally {
      sim.setFaults([]);
    }
  });
});
