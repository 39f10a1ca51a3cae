// A failover to a Redis replica that lagged: a real primary and replica (test/support/redis-pair.ts) behind a TCP
// proxy the services reach Redis through. The replica is cut off; addresses are added and a subscription created on
// the primary (their outbox rows applied there and marked applied in PostgreSQL); then the proxy is repointed to the
// replica, every connection cut, and at once a block pays each of those addresses. The replica lacks them, but
// PostgreSQL's applied positions say it must have them: the matcher's lookup waits (it never matches that block
// against the replica as it is) until the registry has replayed the applied rows the replica lacks, and every
// transfer is delivered, each event once. The same switch loses a delivery's schedule entry (an event waiting for
// its retry on the primary): the deliverer's reconciliation puts it back and it is delivered.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { readPositions } from "../../../common/watch-index/generations.ts";
import { watchIndexHandle } from "../../../common/watch-index/layout.ts";
import { readAppliedPositions } from "../../../common/watch-index/positions.ts";
import { sendsPerWebhookId } from "../../support/delivery.ts";
import { startRedisPair, type RedisPair } from "../../support/redis-replica.ts";
import { startTcpProxy, type TcpProxy } from "../../support/tcp-proxy.ts";
import { until } from "../../support/wait.ts";
import { blockWith, startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";

const CHAIN = "tron:mainnet" as const;
const KINDS = ["wallet.transfer.broadcasted", "wallet.transfer.confirmed"];
const fresh = () => hexToBase58(`41${randomBytes(20).toString("hex")}`);

let pair: RedisPair;
let proxy: TcpProxy;
let t: MatcherBed;

beforeAll(async () => {
  pair = await startRedisPair();
  proxy = await startTcpProxy({ hostname: "127.0.0.1", port: pair.primary.port });
  t = await startMatcherBed({
    chains: [CHAIN],
    sim: { solidLag: 2 },
    env: { REDIS_URL: `redis://127.0.0.1:${proxy.port}/0` },
    // A schedule entry lost by the switch is put back after half a second overdue, checked every 200 ms.
    delivererDeps: { worker: { reconcileMs: 200, reconcileGraceMs: 500 } },
  });
}, 60_000);

afterAll(async () => {
  await t?.stop();
  await proxy?.close();
  await pair?.stop();
}, 60_000);

test("a failover to a lagging replica: no block is matched against the replica as it is; every transfer is delivered once", async () => {
  const sim = t.sims[CHAIN]!;
  const receiver = t.bed.receiver;
  const registry = t.bed.registry;
  const db = t.matcher!.db;
  const shards = t.bed.config.watchIndexShards;

  // Before the cut: a subscription and an address the replica will have, and one whose deliveries are to be retried.
  const early = await t.subscribe("/fo-early", { events: KINDS });
  const [a0, retried] = [fresh(), fresh()];
  await t.watch(early, CHAIN, [a0]);
  const retry = await t.subscribe("/fo-retry", { events: ["wallet.transfer.broadcasted"] });
  await t.watch(retry, CHAIN, [retried]);
  await pair.synced();
  await pair.cut();

  // After the cut, on the primary only: more addresses, a new subscription with its own.
  const added = Array.from({ length: 6 }, fresh);
  await t.watch(early, CHAIN, added);
  const late = await t.subscribe("/fo-late", { events: KINDS });
  const lateAddresses = [fresh(), fresh(), fresh()];
  await t.watch(late, CHAIN, lateAddresses);
  // An event whose first attempt is refused with Retry-After: its schedule entry (due in 4 s) is on the primary only.
  receiver.setBehaviour("/fo-retry", { kind: "status", status: 503, headers: { "retry-after": "4" } });
  const paid = await blockWith(sim, [{ type: "trx", from: fresh(), to: retried, amount: 5 }]);
  await t.matcher!.waitForBlock(CHAIN, paid.number);
  await receiver.waitForCount("/fo-retry", 1);
  const applied = await readAppliedPositions(db, CHAIN, shards);
  const onTheReplica = watchIndexHandle(pair.replica.client, { prefix: t.bed.config.redisPrefix, chainId: CHAIN, shards });
  const onReplica = await readPositions(onTheReplica);
  expect(onReplica.some((r, s) => r.position < applied.shards[s]!)).toBe(true);

  // The switch, the registry's replay held back so the matcher's lookup surely comes first: at once a block paying
  // every address.
  await registry.watchIndex.stop();
  proxy.retarget({ hostname: "127.0.0.1", port: pair.replica.port });
  receiver.setBehaviour("/fo-retry", { kind: "ok" });
  const everyone = [a0, ...added, ...lateAddresses];
  const block = await blockWith(sim, everyone.map((to) => ({ type: "trx" as const, from: fresh(), to, amount: 7 })));
  // The lookup finds the replica behind PostgreSQL's applied positions: it waits; nothing of the block is matched.
  await Bun.sleep(1_500);
  expect(t.matcher!.progress(CHAIN)!.number).toBeLessThan(block.number);
  expect(receiver.count("/fo-early") + receiver.count("/fo-late")).toBe(0);

  registry.watchIndex.start();
  sim.produce(3);
  await receiver.waitForCount("/fo-early", (1 + added.length) * 2, 30_000);
  await receiver.waitForCount("/fo-late", lateAddresses.length * 2, 30_000);
  // The retried event's entry was lost with the primary; the reconciliation put it back and it was delivered.
  await receiver.waitForCount("/fo-retry", 2, 30_000);

  const byKind = (path: string) => receiver.deliveries(path).map((d) => JSON.parse(d.body) as { kind: string; data: { to: string } });
  for (const [path, addresses] of [["/fo-early", [a0, ...added]], ["/fo-late", lateAddresses]] as const) {
    const got = byKind(path);
    for (const kind of KINDS) {
      expect(got.filter((p) => p.kind === kind).map((p) => p.data.to).sort()).toEqual([...addresses].sort());
    }
    expect(sendsPerWebhookId(receiver.deliveries(path)).every((n) => n === 1)).toBe(true);
  }
  const retried2 = receiver.deliveries("/fo-retry");
  expect(new Set(retried2.map((d) => d.headers["webhook-id"])).size).toBe(1);
  // Redis (the former replica) now holds what PostgreSQL applied.
  await until("the replica caught up", async () => {
    const now = await readPositions(onTheReplica);
    const want = await readAppliedPositions(db, CHAIN, shards);
    return now.every((r, s) => r.position >= want.shards[s]!);
  }, 10_000);
}, 120_000);
