// OWASP API10:2023 Unsafe Consumption of APIs. Proves: the TRON node is an upstream the matcher does not trust: while
// the node answers garbage (not JSON, JSON of the wrong shape, error statuses, a large answer), the matcher makes no
// event and keeps running; once the node answers properly again, the transfer it missed gets exactly one event.
// Mechanisms: the matcher's node client (matcher/: parsing and shape checks, retries with backoff, the one-event-per-
// transfer key). Destination answers are the other upstream: bounded by deliverer/answer-body.ts (see
// api4-resource-consumption and deliverer.bombs); brokers are operator-registered (brokers.security).
// Deeper: test/integration/matcher/solidity-faults.test.ts, matcher.health.test.ts, deliverer.hostile.test.ts,
// deliverer.bombs.test.ts, brokers.security.test.ts, chaos.faults.test.ts.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { loadConfig } from "../../common/config.ts";
import { inProcessTransport } from "../../common/rpc.ts";
import { hexToBase58 } from "../../common/tron-address.ts";
import { createMatcher, type MatcherHandle } from "../../matcher/index.ts";
import { blockWith, startMatcherBed, type MatcherBed } from "../support/matcher-bed.ts";
import { until } from "../support/wait.ts";

const CHAIN = "tron:mainnet" as const;
const fresh = () => hexToBase58(`41${randomBytes(20).toString("hex")}`);

let t: MatcherBed;
let matcher: MatcherHandle | undefined;
let proxy: ReturnType<typeof Bun.serve>;
let hostile = false;
let hostileAnswers = 0;

// Answers a hostile node gives, in turn.
const GARBAGE: (() => Response)[] = [
  () => new Response("<html>502 Bad Gateway</html>", { status: 200, headers: { "content-type": "application/json" } }),
  () => Response.json({ block_header: 5, transactions: "none", blockID: { $gt: "" } }),
  () => Response.json({ Error: "class org.tron.core.exception.BadItemException" }),
  () => new Response("oops", { status: 500 }),
  () => Response.json({ block: [{ block_header: { raw_data: { number: "NaN" } }, transactions: [{ txID: null }] }] }),
  () => new Response(`{"blockID":"${"f".repeat(8 * 1024 * 1024)}"}`, { headers: { "content-type": "application/json" } }),
];

beforeAll(async () => {
  t = await startMatcherBed({ chains: [CHAIN], sim: { recorded: false, startNumber: 43_000_000 }, matcher: false });
  const sim = t.sims[CHAIN]!;
  sim.produce(3);
  // A node between the matcher and the simulator that turns hostile on demand.
  proxy = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      if (hostile) return GARBAGE[hostileAnswers++ % GARBAGE.length]!();
      const url = new URL(req.url);
      return fetch(sim.url.replace(/\/$/, "") + url.pathname + url.search, { method: req.method, headers: req.headers, body: req.method === "POST" ? await req.text() : undefined });
    },
  });
  matcher = await createMatcher(loadConfig(t.bed.env), {
    deliverer: inProcessTransport(t.bed.deliverer!.routes),
    nodeUrls: { [CHAIN]: `http://127.0.0.1:${proxy.port}` },
    stream: { leaseRetryMs: 100 },
  });
}, 60_000);

afterAll(async () => {
  await matcher?.close().catch(() => {});
  proxy?.stop(true);
  await t?.stop();
}, 60_000);

type Payload = { kind: string; data: { txId: string } };

test("a hostile node makes no event and no crash; the honest node's transfer then gets exactly one event", async () => {
  const sim = t.sims[CHAIN]!;
  const watched = fresh();
  const sub = await t.subscribe("/unsafe", { events: ["wallet.transfer.broadcasted"] });
  await t.watch(sub, CHAIN, [watched]);
  await matcher!.waitForBlock(CHAIN, sim.chain.head().block.block_header.raw_data.number);

  hostile = true;
  const block = await blockWith(sim, [{ type: "trx", from: fresh(), to: watched, amount: 7 }]);
  sim.produce(2);
  await until("every kind of garbage served at least twice", async () => hostileAnswers >= GARBAGE.length * 2, 30_000);
  expect(await t.events(sub)).toEqual([]);

  hostile = false;
  await matcher!.waitForBlock(CHAIN, sim.chain.head().block.block_header.raw_data.number, 30_000);
  const events = await until("the missed transfer's event", async () => {
    const all = await t.events(sub);
    return all.length > 0 ? all : null;
  }, 30_000);
  sim.produce(2);
  await matcher!.waitForBlock(CHAIN, sim.chain.head().block.block_header.raw_data.number, 30_000);
  const payloads = (await t.events(sub)).map((e) => JSON.parse(e.payloadJson) as Payload);
  expect(payloads.map((p): unknown[] => [p.kind, p.data.txId])).toEqual([["wallet.transfer.broadcasted", block.txIds[0]]]);
  expect(events).toHaveLength(1);
});
