// Issue 29 fault 1(c), the re-match: half of the watch index's keys deleted at random, and at once blocks paying
// every watched address. The matcher matches them against the damaged index and misses some; the registry's verifier
// (WATCH_INDEX_VERIFY_MS) or its missing-state upkeep repairs the index and files a re-match from the matcher's
// checkpoints at the last clean check (watch_rematch_requests), which the matcher serves (matcher/rematch.ts).
// Afterwards every transfer has its broadcasted and its confirmed event, each delivered exactly once: the events the
// first pass did make are not made again.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { loadConfig } from "../../../common/config.ts";
import { isCluster } from "../../../common/redis.ts";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { rematchedBlocks } from "../../../matcher/metrics.ts";
import { sendsPerWebhookId } from "../../support/delivery.ts";
import { until } from "../../support/wait.ts";
import { startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";

const CHAIN = "tron:mainnet";
const SOLID_LAG = 2;
const fresh = () => hexToBase58(`41${randomBytes(20).toString("hex")}`);

let t: MatcherBed;

beforeAll(async () => {
  t = await startMatcherBed({ chains: [CHAIN], sim: { solidLag: SOLID_LAG }, env: { WATCH_INDEX_VERIFY_MS: "1000" } });
}, 60_000);
afterAll(async () => {
  await t?.stop();
}, 60_000);

const rematched = async () =>
  (await rematchedBlocks.get()).values.filter((v) => v.labels.chain === CHAIN).reduce((n, v) => n + v.value, 0);

type Payload = { id: string; kind: string; data: { txId: string; to: string } };

test("half of the index's keys deleted under traffic: every transfer delivered once as broadcasted and confirmed", async () => {
  const sim = t.sims[CHAIN]!;
  const config = loadConfig(t.bed.env);
  const redis = t.bed.registry.redis;
  const sub = await t.subscribe("/rematch", { events: ["wallet.transfer.broadcasted", "wallet.transfer.confirmed"] });
  const addresses = Array.from({ length: 20 }, fresh);
  await t.watch(sub, CHAIN, addresses);

  // A clean check of the whole index with the matcher running: the re-match's starting point.
  const [warm] = sim.produce(1 + SOLID_LAG);
  await t.matcher!.waitForSolidified(CHAIN, warm!.block.block_header.raw_data.number);
  const watchIndex = t.bed.registry.watchIndex;
  expect(await watchIndex.verify(CHAIN)).toEqual([]);
  const before = await rematched();
  // The registry's upkeep held while the damage is done and the blocks are matched: otherwise it may repair the
  // index before the matcher reaches the blocks, and nothing would be missed (nor re-matched).
  await watchIndex.stop();

  // Half of every key of the chain's index, at random.
  const nodes = isCluster(redis) ? redis.nodes("master") : [redis];
  const keys: string[] = [];
  for (const node of nodes) {
    let cursor = "0";
    do {
      const [next, found] = await node.scan(cursor, "MATCH", `${config.redisPrefix}wi:{${CHAIN}:*`, "COUNT", 1_000);
      cursor = next;
      keys.push(...found);
    } while (cursor !== "0");
  }
  keys.sort(() => Math.random() - 0.5);
  const pipe = redis.pipeline();
  for (const k of keys.slice(0, Math.ceil(keys.length / 2))) pipe.del(k);
  await pipe.exec();

  // At once: blocks paying every watched address (four per block), matched against the damaged index.
  const sender = fresh();
  const txIds = new Map<string, string>();
  let top = 0;
  for (let i = 0; i < addresses.length; i += 4) {
    const batch = addresses.slice(i, i + 4);
    const ids = sim.chain.enqueue(batch.map((to, j) => ({ type: "trx" as const, from: sender, to, amount: 1_000_000 + i + j })));
    batch.forEach((to, j) => txIds.set(ids[j]!, to));
    top = sim.produce(1)[0]!.block.block_header.raw_data.number;
  }
  sim.produce(SOLID_LAG);
  // Time for the streams to fetch the blocks and look them up in the damaged index (shards that lost their state
  // wait; the others answer without the addresses they lost), then the upkeep again: it repairs and files a re-match.
  await Bun.sleep(1_000);
  watchIndex.start();
  await t.matcher!.waitForBlock(CHAIN, top, 30_000);

  // The repair files a re-match, the matcher serves it.
  await until("a re-match served", async () => (await rematched()) > before, 30_000);
  await t.matcher!.waitForSolidified(CHAIN, top, 30_000);
  await t.bed.receiver.waitForCount("/rematch", 2 * addresses.length, 30_000);
  await until(
    "the re-match requests served",
    async () => {
      const rows = (await t.matcher!.db.$client`SELECT count(*)::int AS n FROM watch_rematch_requests WHERE done_at IS NULL`) as { n: number }[];
      return rows[0]!.n === 0;
    },
    30_000,
  );

  const deliveries = t.bed.receiver.deliveries("/rematch");
  const payloads = deliveries.map((d) => JSON.parse(d.body) as Payload);
  for (const kind of ["wallet.transfer.broadcasted", "wallet.transfer.confirmed"]) {
    const got = payloads.filter((p) => p.kind === kind && txIds.has(p.data.txId));
    expect(new Set(got.map((p) => p.data.txId)).size).toBe(addresses.length);
    for (const p of got) expect(p.data.to).toBe(txIds.get(p.data.txId)!);
  }
  // None twice: one event per transfer and kind, each webhook-id delivered once.
  const events = (await t.events(sub)).filter((e) => txIds.has((JSON.parse(e.payloadJson) as Payload).data.txId));
  expect(events).toHaveLength(2 * addresses.length);
  expect(sendsPerWebhookId(deliveries).every((n) => n === 1)).toBe(true);
}, 60_000);
