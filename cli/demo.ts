// `bun run demo`: the whole product on one machine, no internet. It starts the stack in-process (gateway, registry,
// deliverer, matcher) on a throwaway PostgreSQL database and Redis DB, a simulated TRON node (tools/tron-sim: the
// recorded mainnet block, then a new mainnet-like block every 3 s), and a local HTTPS receiver that verifies every
// Standard Webhooks signature. Through the public API it creates a key, a subscription and watches on addresses the
// simulator's blocks use, then prints each verified delivery as it arrives. A second subscription follows the
// transfer lifecycle: one USDT transfer going broadcasted → confirmed and one reverted (failed), with the seconds
// between them; the simulator's solidified head trails its head by DEMO_SOLID_LAG blocks (default 3, so it takes
// seconds; mainnet's is 19, about a minute). Ctrl-C stops and cleans up.
// Last, a backfill: the simulator starts with an hour of past blocks holding transfers to a wallet nobody watches yet;
// a third subscription adds that wallet and asks for its last hour, and the demo shows the job's progress and the
// past transfers arriving as events marked with the job (data.backfill).
// DEMO_SECONDS=n stops by itself after n seconds; DEMO_BLOCK_MS changes the block interval.
import { randomBytes } from "node:crypto";
import { BROADCASTED, CONFIRMED, TRANSFER_KINDS } from "../common/contract/index.ts";
import { createTronWebhooksClient, unwrap, type TronWebhooksClient } from "../clients/typescript/src/index.ts";
import type { WalletTransferBroadcasted, WalletTransferConfirmed, WalletTransferFailed } from "../clients/typescript/src/webhooks.ts";
import { hexToBase58 } from "../common/tron-address.ts";
import { staticResolver } from "../common/ssrf.ts";
import { setLogLevel } from "../common/logger.ts";
import { startStack, type Stack } from "../test/support/stack.ts";
import { createTestPki } from "../tools/receiver/certs.ts";
import { startReceiver, type Receiver } from "../tools/receiver/server.ts";
import { startTronSim, type TronSim } from "../tools/tron-sim/server.ts";
import { startDemoNats, type DemoNats } from "./demo-nats.ts";

const BLOCK_MS = Number(process.env.DEMO_BLOCK_MS ?? 3_000);
const SECONDS = process.env.DEMO_SECONDS ? Number(process.env.DEMO_SECONDS) : undefined;
const WATCHED = 5;
const SOLID_LAG = Number(process.env.DEMO_SOLID_LAG ?? 3);
const USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
/** An hour of 3-s blocks before the head, every 60th carrying a transfer to the history wallet. */
const HISTORY_BLOCKS = 1_200;
const HISTORY_EVERY = 60;

/** What the demo's receivers get: the transfer kinds' payloads. */
type TransferPayload = WalletTransferBroadcasted | WalletTransferConfirmed | WalletTransferFailed;

const dim = (s: string) => `\x1b[2m${s}\x1b[0m`;
const bold = (s: string) => `\x1b[1m${s}\x1b[0m`;
const green = (s: string) => `\x1b[32m${s}\x1b[0m`;
const red = (s: string) => `\x1b[31m${s}\x1b[0m`;

function say(text: string) {
  process.stdout.write(`${text}\n`);
}

function formatAmount(amount: string, decimals: number | null): string {
  if (decimals === null || decimals === 0) return amount;
  const padded = amount.padStart(decimals + 1, "0");
  const whole = padded.slice(0, -decimals);
  const frac = padded.slice(-decimals).replace(/0+$/, "");
  return frac ? `${whole}.${frac}` : whole;
}

/** The public API as a customer calls it (the generated client), each request and answer shown as it goes. */
function apiClient(stack: Stack, key: string): TronWebhooksClient {
  const client = createTronWebhooksClient({ baseUrl: stack.baseUrl, apiKey: key });
  client.use({
    async onRequest({ request }) {
      const body = request.body ? ` ${(await request.clone().text()).slice(0, 140)}` : "";
      say(dim(`  → ${request.method} ${new URL(request.url).pathname}${body}`));
    },
    onResponse({ response }) {
      say(dim(`  ← ${response.status}`));
    },
  });
  return client;
}

async function main() {
  setLogLevel("warn");
  say(bold("TRON webhooks demo") + dim("  (everything local: throwaway database, simulated TRON node, local HTTPS receiver)"));
  const pki = createTestPki();
  const receiver: Receiver = await startReceiver({ cert: pki.cert, key: pki.key });
  const historyWallet = hexToBase58(`41${randomBytes(20).toString("hex")}`);
  // The past hour is made with few transactions a block (it is made before the node answers), the live blocks with 60.
  const sim: TronSim = startTronSim({
    blockMs: BLOCK_MS, txPerBlock: 5, poolSize: 150, seed: Date.now() & 0xffff, solidLag: SOLID_LAG,
    backlog: HISTORY_BLOCKS, history: { to: [historyWallet], every: HISTORY_EVERY },
  });
  sim.chain.txPerBlock = 60;
  const resolver = staticResolver({ localhost: ["127.0.0.1"] });
  const stack = await startStack({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.1/32",
      DELIVERY_CA_FILE: pki.caFile,
      MATCHER_CHAINS: "tron:mainnet",
      LOG_LEVEL: "warn",
    },
    resolver,
    deliverer: { resolver },
    matcher: { nodeUrls: { "tron:mainnet": sim.url } },
  });
  let nats: DemoNats | undefined;
  let stopping = false;
  const stop = async (code = 0) => {
    if (stopping) return;
    stopping = true;
    say(dim("\nstopping: the stack, the simulator and the receiver; the throwaway database is dropped"));
    await nats?.close().catch(() => {});
    await stack.stop().catch(() => {});
    await sim.stop().catch(() => {});
    await receiver.close().catch(() => {});
    process.exit(code);
  };
  process.on("SIGINT", () => void stop(0));
  process.on("SIGTERM", () => void stop(0));

  try {
    say(`\n${bold("1.")} Services: gateway ${stack.baseUrl}  (API docs at ${stack.baseUrl}/docs)`);
    say(`   TRON node (simulated): ${sim.url}  — a new mainnet-like block every ${BLOCK_MS / 1000} s`);
    say(`   Its solidified head trails the head by ${SOLID_LAG} blocks (mainnet: 19, about a minute; short here so finality takes seconds)`);
    say(`   Receiver: ${receiver.url("/webhooks")}  — verifies every signature`);

    const key = await stack.createKey({ name: "demo" });
    say(`\n${bold("2.")} An API key: ${key.key.slice(0, 10)}…  (bun run keys create does the same)`);

    const api = apiClient(stack, key.key);
    const watch = (id: string, addresses: string[]) =>
      unwrap(api.PATCH("/v1/subscriptions/{id}/filters/addresses", {
        params: { path: { id } },
        body: { add: addresses.map((address) => ({ chainId: "tron:mainnet", address })) },
      }));

    say(`\n${bold("3.")} A subscription to the receiver:`);
    const sub = await unwrap(api.POST("/v1/subscriptions", {
      body: { destination: { type: "https", url: receiver.url("/webhooks") }, events: [BROADCASTED], description: "demo" },
    }));
    const secret = sub.destination.secret ?? "";
    receiver.setSecrets("/webhooks", [secret]);
    say(`   id ${sub.id}, signing secret ${secret.slice(0, 12)}… (shown once; the receiver verifies with it)`);

    const watched = sim.poolAddresses(WATCHED);
    say(`\n${bold("4.")} Watch ${WATCHED} addresses that the simulator's blocks use:`);
    await watch(sub.id, watched);
    for (const a of watched) say(dim(`   ${a}`));

    nats = await startDemoNats(stack.registry.store);
    if (nats) {
      say(`\n${bold("4b.")} NATS JetStream answers on 127.0.0.1:4222: the same addresses to subject ${nats.subject}`);
      say(dim(`   (broker ${nats.broker} registered as \`bun run brokers add ${nats.broker} nats://127.0.0.1:4222\` does)`));
      const natsSub = await unwrap(api.POST("/v1/subscriptions", {
        body: {
          destination: { type: "nats", broker: nats.broker, subject: nats.subject },
          events: [BROADCASTED],
          description: "demo over NATS",
        },
      }));
      await watch(natsSub.id, watched);
      await nats.read(natsSub.destination.secret ?? "");
    } else {
      say(dim(`\n   (NATS is not reachable on 127.0.0.1:4222: the demo shows HTTPS only)`));
    }

    say(`\n${bold("5.")} The lifecycle: a second subscription to all three transfer kinds, watching a new wallet:`);
    const life = await unwrap(api.POST("/v1/subscriptions", {
      body: { destination: { type: "https", url: receiver.url("/lifecycle") }, events: [...TRANSFER_KINDS], description: "demo lifecycle" },
    }));
    receiver.setSecrets("/lifecycle", [life.destination.secret ?? ""]);
    const wallet = hexToBase58(`41${randomBytes(20).toString("hex")}`);
    await watch(life.id, [wallet]);
    const [paid, reverted] = sim.chain.enqueue([
      { type: "trc20", from: watched[0]!, to: wallet, amount: "25000000", contract: USDT },
      { type: "trc20", from: watched[1]!, to: wallet, amount: "1000000", contract: USDT, result: "REVERT" },
    ]) as [string, string];
    say(`   queued for the next block: 25 USDT to ${wallet.slice(0, 8)}… (tx ${paid.slice(0, 10)}…) and a 1 USDT transfer that reverts (tx ${reverted.slice(0, 10)}…)`);
    say(`   expect: broadcasted at once, confirmed ~${(SOLID_LAG * BLOCK_MS) / 1000} s later when the block is solidified; the reverted one only as failed`);

    await backfillStep(api, receiver, historyWallet, sim);

    say(`\n${bold("7.")} Waiting for transfers that touch them (TRX, USDT, TRC-10). Ctrl-C to stop.\n`);
    let shown = 0;
    let lifeShown = 0;
    const broadcastedAt = new Map<string, number>();
    let natsShown = 0;
    const started = Date.now();
    for (;;) {
      const lives = receiver.deliveries("/lifecycle");
      for (; lifeShown < lives.length; lifeShown++) {
        const d = lives[lifeShown]!;
        const p = JSON.parse(d.body) as TransferPayload;
        const sig = d.verified ? green("signature ✓") : red("signature ✗");
        const which = p.data.txId === paid ? "25 USDT" : p.data.txId === reverted ? "1 USDT (reverting)" : p.data.txId.slice(0, 10);
        const afterBlock = ((d.receivedAt - p.data.blockTimestamp) / 1000).toFixed(1);
        if (p.kind === BROADCASTED) {
          broadcastedAt.set(p.data.txId, d.receivedAt);
          say(`${sig}  ${bold("lifecycle")}  ${which}: ${bold("broadcasted")} in block ${p.data.blockNumber}, ${afterBlock} s after the block`);
        } else {
          const since = broadcastedAt.get(p.data.txId);
          const gap = since === undefined ? `${afterBlock} s after its block` : `${((d.receivedAt - since) / 1000).toFixed(1)} s after broadcasted`;
          const what = p.kind === CONFIRMED ? green("confirmed") : red(`failed (reason ${p.data.reason})`);
          say(`${sig}  ${bold("lifecycle")}  ${which}: ${what}, ${gap} (solidified head ${p.data.solidifiedBlockNumber})`);
        }
      }
      const all = receiver.deliveries("/webhooks");
      for (; shown < all.length; shown++) {
        const d = all[shown]!;
        const p = JSON.parse(d.body) as TransferPayload;
        const a = p.data.asset;
        const what = `${formatAmount(p.data.amount, a.decimals)} ${a.symbol ?? (a.tokenId ? `TRC-10 #${a.tokenId}` : a.standard)}`;
        const roles = p.data.matchedAddresses.map((m) => `${m.role}`).join("+");
        const sig = d.verified ? green("signature ✓") : red("signature ✗");
        const latency = d.receivedAt - p.data.blockTimestamp;
        say(`${sig}  block ${p.data.blockNumber}  ${what.padEnd(22)} ${p.data.from.slice(0, 8)}… → ${p.data.to.slice(0, 8)}…  watched as ${roles.padEnd(7)} ${dim(`${p.id}  ${latency} ms after the block`)}`);
      }
      if (nats) {
        const overHttps = new Set(all.map((d) => {
          const p = JSON.parse(d.body) as { data: { txId: string; logIndex: number } };
          return `${p.data.txId}:${p.data.logIndex}`;
        }));
        for (; natsShown < nats.messages.length; natsShown++) {
          const m = nats.messages[natsShown]!;
          if (!overHttps.has(m.transfer)) break;
          const sig = m.verified ? green("signature ✓") : red("signature ✗");
          say(`${sig}  ${dim("the same transfer on NATS")} ${nats.subject}  tx ${m.transfer.slice(0, 12)}…  ${dim(m.eventId)}`);
        }
      }
      if (SECONDS !== undefined && Date.now() - started > SECONDS * 1000) break;
      await Bun.sleep(100);
    }
    const all = [...receiver.deliveries("/webhooks"), ...receiver.deliveries("/lifecycle")];
    say(`\n${all.length} deliveries, ${all.filter((d) => d.verified).length} with a valid signature.`);
    if (nats) say(`${nats.messages.length} NATS messages, ${nats.messages.filter((m) => m.verified).length} with a valid signature.`);
    await stop(all.every((d) => d.verified) ? 0 : 1);
  } catch (err) {
    say(red(`demo failed: ${(err as Error).message}`));
    await stop(1);
  }
}

/** A backfilled transfer's payload: the fields the demo prints. */
interface HistoryPayload {
  data: { blockNumber: number; blockTimestamp: number; amount: string; to: string; backfill: string; asset: { decimals: number | null; symbol: string | null; standard: string } };
}

/** A new wallet with an hour of history: a backfill finds its past transfers and delivers them as events. */
async function backfillStep(api: TronWebhooksClient, receiver: Receiver, wallet: string, sim: TronSim): Promise<void> {
  say(`\n${bold("6.")} History on demand: a wallet with an hour of past transfers (${sim.chain.history.length} in the simulator's last ${HISTORY_BLOCKS} blocks), watched only now:`);
  const sub = await unwrap(api.POST("/v1/subscriptions", {
    body: { destination: { type: "https", url: receiver.url("/history") }, events: [CONFIRMED], description: "demo backfill" },
  }));
  receiver.setSecrets("/history", [sub.destination.secret ?? ""]);
  await unwrap(api.PATCH("/v1/subscriptions/{id}/filters/addresses", {
    params: { path: { id: sub.id } },
    body: { add: [{ chainId: "tron:mainnet", address: wallet }] },
  }));
  const since = new Date(Date.now() - 3_600_000).toISOString();
  const path = { id: sub.id };
  let job = await unwrap(api.POST("/v1/subscriptions/{id}/backfills", { params: { path }, body: { chainId: "tron:mainnet", since } }));
  say(`   job ${job.id}: blocks ${job.fromBlock} to ${job.toBlock}, ${job.status}`);
  const started = Date.now();
  while (job.status === "queued" || job.status === "running") {
    await Bun.sleep(500);
    job = await unwrap(api.GET("/v1/subscriptions/{id}/backfills/{backfillId}", { params: { path: { ...path, backfillId: job.id } } }));
    const p = job.progress;
    say(dim(`   ${String(job.status).padEnd(9)} ${p.blocksScanned} / ${p.blocksTotal} blocks, ${p.eventsCreated} events`));
    if (Date.now() - started > 120_000) break;
  }
  const p = job.progress;
  const deadline = Date.now() + 10_000;
  while (receiver.deliveries("/history").length < p.eventsCreated && Date.now() < deadline) await Bun.sleep(100);
  // Deliveries are independent (no order); shown by block.
  const found = receiver.deliveries("/history").map((d) => ({ d, e: JSON.parse(d.body) as HistoryPayload }));
  for (const { d, e } of found.sort((x, y) => x.e.data.blockNumber - y.e.data.blockNumber)) {
    const sig = d.verified ? green("signature ✓") : red("signature ✗");
    const ago = Math.round((Date.now() - e.data.blockTimestamp) / 60_000);
    say(`${sig}  ${bold("backfill")}  block ${e.data.blockNumber} (${ago} min ago)  ${formatAmount(e.data.amount, e.data.asset.decimals)} ${e.data.asset.symbol ?? e.data.asset.standard} → ${e.data.to.slice(0, 8)}…  ${dim(`data.backfill ${e.data.backfill}`)}`);
  }
}

await main();
