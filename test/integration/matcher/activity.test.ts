// Account activity end to end through the simulator (solidified head 3 blocks below the head): each family's
// `.broadcasted` from the head stream and `.confirmed` once its block is solidified, with the roles of the watched
// addresses; a fork that drops a broadcasted approval leaves it without a final event while a re-included one gets
// its confirmed; a block read again makes no second event; a backfill finds past activity.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { CreateBackfillRequestSchema } from "../../../gen/webhooks/registry/v1/backfill_pb.ts";
import { loadBackfillConfig } from "../../../common/backfill-config.ts";
import { NodeChainView } from "../../../registry/backfill-range.ts";
import { backfillService } from "../../../registry/backfills.ts";
import { until } from "../../support/wait.ts";
import { randomBytes } from "node:crypto";
import { ACTIVITY_KINDS } from "../../../common/contract/index.ts";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { tryAcquireChainLease } from "../../../matcher/lease.ts";
import { advanceCheckpoint, advanceSolidifiedCheckpoint, openMatcherDatabase } from "../../../matcher/store.ts";
import { startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";

const fresh = () => hexToBase58(`41${randomBytes(20).toString("hex")}`);
const USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const CHAIN = "tron:mainnet" as const;
const LAG = 3;

type Payload = { id: string; kind: string; data: Record<string, unknown> & { txId: string; blockNumber: number; blockHash: string } };

let t: MatcherBed;
beforeAll(async () => {
  t = await startMatcherBed({ chains: [CHAIN], sim: { solidLag: LAG } });
});
afterAll(async () => {
  await t?.stop();
});

const payloads = (path: string) => t.bed.receiver.deliveries(path).map((d) => JSON.parse(d.body) as Payload);

interface Queued {
  txIds: string[];
  activities: { type: string; txId: string; logIndex?: number }[];
}

/** Queues activities and makes the block holding them; its number and id. */
async function blockWithActivities(activities: Record<string, unknown>[]) {
  const sim = t.sims[CHAIN]!;
  const res = await fetch(`${sim.url}/sim/activities`, { method: "POST", body: JSON.stringify({ activities }) });
  expect(res.status).toBe(200);
  const queued = (await res.json()) as Queued;
  const [stored] = sim.produce(1);
  return { number: stored!.block.block_header.raw_data.number, blockId: stored!.block.blockID, queued };
}

async function solidifyThrough(number: number) {
  const sim = t.sims[CHAIN]!;
  sim.produce(LAG + 1);
  await t.matcher!.waitForSolidified(CHAIN, number);
}

test("each family: broadcasted at the head, confirmed once solidified, with the watched addresses' roles", async () => {
  const [owner, spender, delegator, receiver, signer, user, voter] = Array.from({ length: 7 }, fresh) as string[];
  const all = await t.subscribe("/act-all", { events: [...ACTIVITY_KINDS] });
  await t.watch(all, CHAIN, [owner!, receiver!, signer!, user!, voter!]);
  const finalOnly = await t.subscribe("/act-final", { events: ["wallet.approval.confirmed", "wallet.resource.confirmed"] });
  await t.watch(finalOnly, CHAIN, [spender!, delegator!]);
  // A transfer subscription on the same addresses gets none of it.
  const transfers = await t.subscribe("/act-transfers", { events: ["wallet.transfer.broadcasted", "wallet.transfer.confirmed"] });
  await t.watch(transfers, CHAIN, [owner!, receiver!, user!]);

  const block = await blockWithActivities([
    { type: "approval", owner, spender, amount: (1n << 255n).toString() },
    { type: "delegate", owner: delegator, receiver, amount: 5_000_000_000, resource: "ENERGY", lock: true, lockPeriod: 86_400 },
    { type: "permission", owner: signer, permissions: { owner: { threshold: 2, keys: [{ address: signer, weight: 1 }, { address: fresh(), weight: 1 }] } } },
    { type: "blacklist_added", user },
    { type: "vote", owner: voter, votes: [{ address: fresh(), count: 10 }] },
  ]);
  const [approvalTx, delegateTx, permissionTx, blacklistTx, voteTx] = block.queued.activities;
  await t.matcher!.waitForBlock(CHAIN, block.number);
  await t.bed.receiver.waitForCount("/act-all", 5);
  expect(payloads("/act-final")).toHaveLength(0);
  const broadcasted = payloads("/act-all");
  expect(broadcasted.map((p) => p.kind).sort()).toEqual(
    ["wallet.approval.broadcasted", "wallet.blacklist.broadcasted", "wallet.permission.broadcasted", "wallet.resource.broadcasted", "wallet.resource.broadcasted"].sort(),
  );
  const byTx = (list: Payload[], tx: string) => list.find((p) => p.data.txId === tx)!;
  expect(byTx(broadcasted, approvalTx!.txId).data).toMatchObject({
    chainId: CHAIN,
    blockNumber: block.number,
    blockHash: block.blockId,
    logIndex: approvalTx!.logIndex,
    owner,
    spender,
    amount: (1n << 255n).toString(),
    unlimited: true,
    asset: { standard: "TRC20", contract: USDT, symbol: "USDT", decimals: 6 },
    matchedAddresses: [{ chainId: CHAIN, address: owner, role: "owner" }],
  });
  // /act-all watches the receiver, not the delegator: the payload's owner is how it learns who delegated.
  expect(byTx(broadcasted, delegateTx!.txId).data).toMatchObject({
    logIndex: -1,
    type: "delegate",
    owner: delegator,
    resource: "ENERGY",
    amount: "5000000000",
    receiver,
    lock: true,
    lockPeriod: 86_400,
    votes: null,
    matchedAddresses: [{ chainId: CHAIN, address: receiver, role: "receiver" }],
  });
  expect(byTx(broadcasted, permissionTx!.txId).data).toMatchObject({ address: signer, owner: { threshold: 2 }, matchedAddresses: [{ address: signer, role: "owner" }] });
  expect(byTx(broadcasted, blacklistTx!.txId).data).toMatchObject({ type: "added", address: user, amount: null, asset: { contract: USDT, symbol: "USDT" }, matchedAddresses: [{ address: user, role: "blacklisted" }] });
  expect(byTx(broadcasted, voteTx!.txId).data).toMatchObject({ type: "vote", owner: voter, amount: null, resource: null, matchedAddresses: [{ address: voter, role: "owner" }] });
  expect(byTx(broadcasted, voteTx!.txId).data.solidifiedBlockNumber).toBeUndefined();

  await solidifyThrough(block.number);
  await t.bed.receiver.waitForCount("/act-all", 10);
  await t.bed.receiver.waitForCount("/act-final", 2);
  const confirmed = payloads("/act-all").filter((p) => p.kind.endsWith(".confirmed"));
  expect(confirmed.map((p) => p.data.txId).sort()).toEqual(block.queued.txIds.slice().sort());
  for (const c of confirmed) {
    expect(c.data.blockHash).toBe(block.blockId);
    expect(c.data.solidifiedBlockNumber as number).toBeGreaterThanOrEqual(block.number);
  }
  const final = payloads("/act-final");
  expect(final.map((p) => p.kind).sort()).toEqual(["wallet.approval.confirmed", "wallet.resource.confirmed"]);
  expect(byTx(final, approvalTx!.txId).data.matchedAddresses).toEqual([{ chainId: CHAIN, address: spender, role: "spender" }]);
  expect(byTx(final, delegateTx!.txId).data).toMatchObject({ owner: delegator, receiver, matchedAddresses: [{ chainId: CHAIN, address: delegator, role: "owner" }] });
  await Bun.sleep(300);
  expect(t.bed.receiver.deliveries("/act-transfers")).toHaveLength(0);
  for (const d of [...t.bed.receiver.deliveries("/act-all"), ...t.bed.receiver.deliveries("/act-final")]) expect(d.verified).toBe(true);
});

test("a fork that drops a broadcasted approval: no confirmed for it; the re-included one is confirmed on the new block", async () => {
  const sim = t.sims[CHAIN]!;
  const [owner, spender] = [fresh(), fresh()];
  const sub = await t.subscribe("/act-fork", { events: ["wallet.approval.broadcasted", "wallet.approval.confirmed"] });
  await t.watch(sub, CHAIN, [owner]);
  const old = await blockWithActivities([
    { type: "approval", owner, spender, amount: "100" },
    { type: "approval", owner, spender, amount: "0" },
  ]);
  const [kept, lost] = old.queued.txIds as [string, string];
  await t.matcher!.waitForBlock(CHAIN, old.number);
  await t.bed.receiver.waitForCount("/act-fork", 2);

  const res = await fetch(`${sim.url}/sim/fork`, { method: "POST", body: JSON.stringify({ depth: 1, reinclude: [kept] }) });
  expect(res.status).toBe(200);
  const fork = (await res.json()) as { removed: string[]; added: string[] };
  expect(fork.removed).toEqual([old.blockId]);
  // Past the dropped transaction's expiration, then everything solidified.
  await fetch(`${sim.url}/sim/produce`, { method: "POST", body: JSON.stringify({ count: 1, advanceMs: 61_000 }) });
  sim.produce(LAG + 1);
  await t.matcher!.waitForSolidified(CHAIN, sim.chain.head().block.block_header.raw_data.number - LAG);
  await t.bed.receiver.waitForCount("/act-fork", 3);
  await Bun.sleep(500);
  const got = payloads("/act-fork");
  expect(got.map((p) => `${p.kind}:${p.data.txId}`).sort()).toEqual(
    [`wallet.approval.broadcasted:${kept}`, `wallet.approval.broadcasted:${lost}`, `wallet.approval.confirmed:${kept}`].sort(),
  );
  const confirmed = got.find((p) => p.kind === "wallet.approval.confirmed")!;
  expect(confirmed.data.blockHash).toBe(fork.added[0]!);
  expect(confirmed.data.amount).toBe("100");
  expect(got.find((p) => p.data.txId === lost)!.data).toMatchObject({ amount: "0", unlimited: false });
});

test("a block read again (checkpoints rewound) makes no second event", async () => {
  const [owner, receiver] = [fresh(), fresh()];
  const sub = await t.subscribe("/act-again", { events: ["wallet.resource.broadcasted", "wallet.resource.confirmed"] });
  await t.watch(sub, CHAIN, [owner]);
  const block = await blockWithActivities([{ type: "undelegate", owner, receiver, amount: 1_000_000 }]);
  await solidifyThrough(block.number);
  await t.bed.receiver.waitForCount("/act-again", 2);
  const before = (await t.events(sub)).map((e) => e.id).sort();
  expect(before).toHaveLength(2);

  // Both streams go back below the block and read it again.
  const sim = t.sims[CHAIN]!;
  const prev = sim.chain.byNumber(block.number - 1)!.block;
  const matcher = t.matcher!;
  await matcher.close();
  const db = await openMatcherDatabase(t.bed.env.DATABASE_URL!);
  const lease = (await tryAcquireChainLease(db.$client, CHAIN))!;
  const ref = { number: block.number - 1, blockId: prev.blockID };
  await advanceCheckpoint(lease, [ref]);
  await advanceSolidifiedCheckpoint(lease, ref, []);
  await lease.release();
  await db.$client.close();
  const again = await t.startMatcher();
  sim.produce(1);
  await again.waitForBlock(CHAIN, sim.chain.head().block.block_header.raw_data.number);
  await again.waitForSolidified(CHAIN, block.number);
  await Bun.sleep(500);
  expect((await t.events(sub)).map((e) => e.id).sort()).toEqual(before);
  expect(t.bed.receiver.deliveries("/act-again")).toHaveLength(2);
});

test("a backfill over blocks from before the address was watched makes their activity's events, marked with the job", async () => {
  const sim = t.sims[CHAIN]!;
  const [owner, spender] = [fresh(), fresh()];
  // The block passes unwatched: nothing is made for it live.
  const past = await blockWithActivities([
    { type: "approval", owner, spender, amount: "5" },
    { type: "freeze", owner, amount: 2_000_000, resource: "BANDWIDTH" },
  ]);
  await solidifyThrough(past.number);
  const sub = await t.subscribe("/act-backfill", { events: ["wallet.approval.confirmed", "wallet.resource.broadcasted", "wallet.resource.confirmed"] });
  await t.watch(sub, CHAIN, [owner]);
  const svc = backfillService({
    store: t.bed.registry.store,
    tokenKeys: t.bed.registry.keyring.tokenKeys,
    chains: new NodeChainView(t.bed.config, { [CHAIN]: sim.url }),
    limits: loadBackfillConfig({}),
  });
  const res = (await svc.createBackfill(
    create(CreateBackfillRequestSchema, {
      keyId: sub.keyId,
      subscriptionId: sub.subscriptionId,
      chainId: CHAIN,
      fromBlock: BigInt(past.number - 1),
      toBlock: BigInt(past.number + 1),
      addressesGiven: false,
      addresses: [],
    }),
    {} as HandlerContext,
  )) as { backfill?: { id: string } };
  const id = res.backfill!.id;
  await until(`backfill ${id}`, async () => {
    const [row] = (await t.bed.sql`SELECT status FROM backfills WHERE id = ${id}`) as { status: string }[];
    return row?.status === "completed" ? true : null;
  }, 60_000, 100);
  await t.bed.receiver.waitForCount("/act-backfill", 3);
  const got = payloads("/act-backfill");
  const [approvalTx, freezeTx] = past.queued.txIds as [string, string];
  expect(got.map((p) => `${p.kind}:${p.data.txId}`).sort()).toEqual(
    [`wallet.approval.confirmed:${approvalTx}`, `wallet.resource.broadcasted:${freezeTx}`, `wallet.resource.confirmed:${freezeTx}`].sort(),
  );
  for (const p of got) expect(p.data.backfill).toBe(id);
  expect(got.find((p) => p.kind === "wallet.resource.confirmed")!.data).toMatchObject({ type: "freeze", resource: "BANDWIDTH", amount: "2000000" });
});
