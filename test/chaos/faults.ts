// `bun run chaos --faults [--minutes N]`: the fault run. The stack as separate processes (2 registries, 2
// deliverers, 2 matchers, the gateway) on a PostgreSQL cluster and a Redis primary + replica of its own, the TRON
// node simulator making transfers to watched and unwatched addresses, and faults all along: SIGKILLed services,
// forks (one while no matcher runs), receivers failing and hanging, a Redis failover to a replica that missed the
// last writes, a PostgreSQL restart, the node answering 429 and timing out. Then every invariant is checked
// (invariants.ts) and counted. Everything it starts is stopped and removed, whatever happens.
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { SQL, type Subprocess } from "bun";
import { hexToBase58 } from "../../common/tron-address.ts";
import { startPgCluster, type PgCluster } from "../support/pg-cluster.ts";
import { freePorts } from "../support/ports.ts";
import { startRedisPair, type RedisPair } from "../support/redis-pair.ts";
import { until } from "../support/wait.ts";
import { createTestPki } from "../../tools/receiver/certs.ts";
import { startBalancer, type Balancer } from "./balancer.ts";
import { classifyMissed, type MissedClass } from "./classify.ts";
import { checkInvariants, expectedDeliveries, KINDS, type CheckpointSample, type InvariantResult, type MadeTransfer, type PlannedSubscription, type RunRecord, type WatchInterval } from "./invariants.ts";
import { startNodeFaults, type NodeFaults } from "./node-faults.ts";
import { startChaosReceiver, type ChaosReceiver } from "./receiver.ts";
import { superviseServices, type Supervisor } from "./services.ts";

const ROOT = join(import.meta.dir, "..", "..");
const BUN = join(ROOT, "node_modules", ".bin", "bun");
const CHAIN = "tron:mainnet";
const BLOCK_MS = 500;
/**
 * Deeper than MATCHER_CONFIRMATIONS' default (19): a matcher that stops trusting the node's solidified head (the
 * solidity API answered 429 once) and confirms at head − 19 confirms blocks a fork may still replace.
 */
const SOLID_LAG = 22;
/** A round of transfers about every this many ms. */
const TRAFFIC_MS = 1_000;
/** The simulator's transactions expire a minute after they are made (tools/tron-sim/generate.ts). */
const EXPIRATION_MS = 60_000;
/** The drain's deadline: generous, as it ends as soon as nothing more can arrive. */
const DRAIN_MS = 600_000;
/** The receivers' outages, as fractions of the phase: which subscription's path, failing (500) or hanging. */
const RECEIVER_OUTAGES = [
  { sub: "all", mode: "fail", from: 0.08, to: 0.16 },
  { sub: "final", mode: "hang", from: 0.3, to: 0.37 },
  { sub: "all", mode: "fail", from: 0.55, to: 0.6 },
  { sub: "head", mode: "hang", from: 0.72, to: 0.77 },
] as const;

/**
 * The deliverers' RETRY_SCHEDULE for a phase of `phaseMs`: short delays (the run is minutes, not hours), but in all
 * longer than its longest receiver outage with a margin, since the contract lets an event fail once its attempts run
 * out: an outage alone must never exhaust them, or "delivered at least once" would count the contract's own `failed`.
 */
export function retrySchedule(phaseMs: number): string {
  const delays = [0, 250, 500, 1_000, 2_000, 3_000, 5_000, 5_000, 5_000, 5_000, 5_000, 5_000, 5_000];
  const longest = Math.max(...RECEIVER_OUTAGES.map((o) => (o.to - o.from) * phaseMs));
  const needed = longest * 1.25 + 20_000;
  for (let total = delays.reduce((a, b) => a + b, 0); total < needed; total += 15_000) delays.push(15_000);
  return delays.map((d) => `${d}ms`).join(",");
}

export interface FaultRunOptions {
  /** How long faults and transfers go on (the setup and the drain come on top). */
  phaseMs: number;
  seed?: number;
  /** How long the drain may wait for the expected deliveries after the phase. */
  drainMs?: number;
  log?: (line: string) => void;
  /** Tear everything down and exit on SIGINT / SIGTERM (the command line; a test leaves it to the test runner). */
  handleSignals?: boolean;
  /** Where to write every service's log lines (JSON, one per line) at the end, for diagnosis. */
  logFile?: string;
  /** Leave the run's PostgreSQL cluster and Redis running at the end (their addresses are in the report), to look into. */
  keep?: boolean;
}

export interface FaultRunReport {
  results: InvariantResult[];
  /** What was done and seen, one line each. */
  summary: string[];
  seconds: number;
  /** Every missed expected delivery, classified by what the database says became of it (empty when none). */
  missed: MissedClass[];
}

/** mulberry32: a small seeded generator, so a run's fault schedule can be replayed from its seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const freshAddress = () => hexToBase58(`41${randomBytes(20).toString("hex")}`);

export async function runFaults(opts: FaultRunOptions): Promise<FaultRunReport> {
  const started = Date.now();
  const seed = opts.seed ?? (Date.now() & 0x7fffffff);
  const random = rng(seed);
  const say = opts.log ?? (() => {});
  const cleanups: (() => Promise<void> | void)[] = [];
  const cleanup = async () => {
    for (const fn of cleanups.splice(0).reverse()) {
      try {
        await fn();
      } catch {
        // Keep tearing down: one failed stop must not leak the rest.
      }
    }
  };
  let services: Supervisor | undefined;
  const step = (what: string) => say(`  ${((Date.now() - started) / 1000).toFixed(1)} s: ${what}`);
  if (opts.handleSignals) {
    for (const sig of ["SIGINT", "SIGTERM"] as const) {
      process.once(sig, () => {
        say(`${sig}: stopping everything the run started`);
        void cleanup().finally(() => process.exit(130));
      });
    }
  }
  const faults = { kills: new Map<string, number>(), forks: 0, forksRefused: 0, drops: 0, failovers: 0, pgRestarts: 0, receiverStretches: 0, nodeStretches: 0 };

  try {
    say(`fault run: seed ${seed}, faults for ${(opts.phaseMs / 1000).toFixed(0)} s`);
    // --- The world: certificates, receiver, PostgreSQL, Redis, simulator, node faults, balancers.
    const pki = createTestPki();
    cleanups.push(() => rmSync(pki.dir, { recursive: true, force: true }));
    const receiver: ChaosReceiver = startChaosReceiver({ cert: pki.cert, key: pki.key });
    cleanups.push(() => receiver.close());
    // --keep: both left running for a look afterwards (the Redis left is the replica promoted mid-run).
    const pg: PgCluster = await startPgCluster();
    if (opts.keep) cleanups.push(() => say(`kept: PostgreSQL ${pg.url("webhooks")} (stop: pg_ctl -D ${pg.dataDir} -m fast stop)`));
    else cleanups.push(() => pg.stop());
    const redis: RedisPair = await startRedisPair();
    if (opts.keep) cleanups.push(() => say(`kept: Redis 127.0.0.1:${redis.replicaPort}, keys prefixed chaos: (stop: redis-cli -p ${redis.replicaPort} shutdown nosave)`));
    else cleanups.push(() => redis.stop());
    const redisLb: Balancer = startBalancer([redis.primaryPort]);
    cleanups.push(() => redisLb.close());

    const [simPort, reg1, reg1g, reg2, reg2g, del1, del1g, del2, del2g, m1, m2, gw] = freePorts(12) as number[] as [number, ...number[]];
    const sim: Subprocess = Bun.spawn(
      [BUN, join(ROOT, "tools/tron-sim/main.ts"), "--port", String(simPort), "--block-ms", String(BLOCK_MS), "--tx", "8",
        "--pool", "60", "--no-recorded", "--solid-lag", String(SOLID_LAG), "--seed", String(seed % 100_000)],
      { cwd: ROOT, stdout: "ignore", stderr: "ignore" },
    );
    cleanups.push(async () => {
      sim.kill("SIGKILL");
      await sim.exited;
    });
    const simUrl = `http://127.0.0.1:${simPort}`;
    const simCall = async <T>(path: string, body?: unknown): Promise<T> => {
      const res = await fetch(`${simUrl}${path}`, body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const json = (await res.json()) as T;
      if (!res.ok) throw Object.assign(new Error(`${path} answered ${res.status}: ${JSON.stringify(json)}`), { status: res.status });
      return json;
    };
    interface SimState { head: { number: number; timestamp: number }; solid: { number: number; timestamp: number } }
    await until("the simulator", () => simCall<SimState>("/sim/state").catch(() => null), 30_000, 100);
    const node: NodeFaults = startNodeFaults(simUrl);
    cleanups.push(() => node.close());
    const registryLb = startBalancer([reg1!, reg2!]);
    cleanups.push(() => registryLb.close());
    const delivererLb = startBalancer([del1!, del2!]);
    cleanups.push(() => delivererLb.close());

    // --- The services.
    const databaseUrl = pg.url("webhooks");
    const common: Record<string, string> = {
      DATABASE_URL: databaseUrl,
      REDIS_URL: `redis://127.0.0.1:${redisLb.port}`,
      REDIS_PREFIX: "chaos:",
      APP_SECRET: randomBytes(32).toString("base64"),
      INTERNAL_TOKEN: randomBytes(32).toString("base64"),
      REGISTRY_URL: `http://127.0.0.1:${registryLb.port}`,
      DELIVERER_URL: `http://127.0.0.1:${delivererLb.port}`,
      DELIVERY_CA_FILE: pki.caFile,
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RETRY_SCHEDULE: retrySchedule(opts.phaseMs),
      DELIVERY_TIMEOUT_MS: "2000",
      RATE_LIMIT_RPS: "100000",
      RATE_LIMIT_BURST: "100000",
      MATCHER_CHAINS: CHAIN,
      TRON_MAINNET_NODE_URL: node.url,
      MATCHER_POLL_MS: "200",
      LOG_LEVEL: "warn",
    };
    const supervisor = superviseServices([
      { name: "registry-1", entry: "registry/main.ts", env: { ...common, REGISTRY_PORT: String(reg1), REGISTRY_GRPC_PORT: String(reg1g) }, healthUrl: `http://127.0.0.1:${reg1}/healthz` },
      { name: "registry-2", entry: "registry/main.ts", env: { ...common, REGISTRY_PORT: String(reg2), REGISTRY_GRPC_PORT: String(reg2g) }, healthUrl: `http://127.0.0.1:${reg2}/healthz` },
      { name: "deliverer-1", entry: "deliverer/main.ts", env: { ...common, DELIVERER_PORT: String(del1), DELIVERER_GRPC_PORT: String(del1g) }, healthUrl: `http://127.0.0.1:${del1}/healthz` },
      { name: "deliverer-2", entry: "deliverer/main.ts", env: { ...common, DELIVERER_PORT: String(del2), DELIVERER_GRPC_PORT: String(del2g) }, healthUrl: `http://127.0.0.1:${del2}/healthz` },
      { name: "matcher-1", entry: "matcher/main.ts", env: { ...common, MATCHER_PORT: String(m1) }, healthUrl: `http://127.0.0.1:${m1}/healthz` },
      { name: "matcher-2", entry: "matcher/main.ts", env: { ...common, MATCHER_PORT: String(m2) }, healthUrl: `http://127.0.0.1:${m2}/healthz` },
      { name: "gateway", entry: "gateway/main.ts", env: { ...common, PORT: String(gw) }, healthUrl: `http://127.0.0.1:${gw}/healthz` },
    ]);
    services = supervisor;
    cleanups.push(() => supervisor.stop());
    const gateway = `http://127.0.0.1:${gw}`;
    step("PostgreSQL, Redis, the simulator and 7 service processes started");
    await until("the gateway ready", async () => (await fetch(`${gateway}/readyz`).catch(() => null))?.ok, 180_000, 250);
    step("the gateway is ready");

    // --- A key, three subscriptions, and their addresses, through the public API.
    const keys = Bun.spawnSync([BUN, join(ROOT, "cli/keys.ts"), "create", "--name", "chaos", "--chains", CHAIN], {
      cwd: ROOT,
      env: { ...(process.env as Record<string, string>), ...common },
    });
    if (keys.exitCode !== 0) throw new Error(`keys create failed: ${keys.stderr.toString()}`);
    step("an API key made");
    const apiKey = keys.stdout.toString().trim().split("\n").pop()!;
    /**
     * A public API call, retried through the faults until it answers 2xx (null when it never did); returns when it
     * was first sent and when it was answered.
     */
    const api = async (method: string, path: string, body: unknown): Promise<{ json: Record<string, unknown>; sentAt: number; answeredAt: number } | null> => {
      const sentAt = Date.now();
      let last = "";
      for (const deadline = sentAt + 120_000; Date.now() < deadline; await Bun.sleep(250)) {
        try {
          const res = await fetch(`${gateway}${path}`, {
            method,
            headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
            body: JSON.stringify(body),
            signal: AbortSignal.timeout(30_000),
          });
          const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
          if (res.ok) return { json, sentAt, answeredAt: Date.now() };
          last = `${res.status} ${JSON.stringify(json)}`;
          if (res.status < 500 && res.status !== 429) break;
        } catch (err) {
          last = String(err);
        }
      }
      say(`  ${method} ${path} never succeeded: ${last}`);
      return null;
    };

    const subscriptions: PlannedSubscription[] = [];
    const subscribe = async (path: string, kinds: string[]) => {
      const made = await api("POST", "/v1/subscriptions", { destination: { type: "https", url: receiver.url(path) }, events: kinds });
      if (!made) throw new Error("the subscriptions could not be made");
      const json = made.json;
      receiver.setSecret(path, (json.destination as { secret: string }).secret);
      const sub = { id: json.id as string, path, kinds };
      subscriptions.push(sub);
      return sub;
    };
    const all = await subscribe("/all", [KINDS.broadcasted, KINDS.confirmed, KINDS.failed]);
    const final = await subscribe("/final", [KINDS.confirmed, KINDS.failed]);
    const head = await subscribe("/head", [KINDS.broadcasted]);

    const watches: WatchInterval[] = [];
    const subPath = (id: string) => subscriptions.find((s) => s.id === id)?.path ?? id;
    let t0 = Infinity;
    // A change that never answered may or may not have happened: it is then never expected, and never forbidden.
    const watch = async (subId: string, addresses: string[]) => {
      const sent = Date.now();
      const done = await api("PATCH", `/v1/subscriptions/${subId}/filters/addresses`, { add: addresses.map((address) => ({ chainId: CHAIN, address })) });
      const [sentAt, answeredAt] = done ? [done.sentAt, done.answeredAt] : [sent, Infinity];
      if (Date.now() >= t0) step(`watch ${addresses.length} on ${subPath(subId)}: ${done ? `answered in ${((answeredAt - sentAt) / 1000).toFixed(1)} s` : "never answered"}`);
      for (const address of addresses) watches.push({ subscriptionId: subId, address, addSentAt: sentAt, addAnsweredAt: answeredAt, removeSentAt: null, removeAnsweredAt: null });
    };
    const unwatch = async (subId: string, addresses: string[]) => {
      const sent = Date.now();
      const done = await api("PATCH", `/v1/subscriptions/${subId}/filters/addresses`, { remove: addresses.map((address) => ({ chainId: CHAIN, address })) });
      const [sentAt, answeredAt] = done ? [done.sentAt, done.answeredAt] : [sent, Infinity];
      step(`unwatch ${addresses.length} on ${subPath(subId)}: ${done ? `answered in ${((answeredAt - sentAt) / 1000).toFixed(1)} s` : "never answered"}`);
      for (const w of watches) {
        if (w.subscriptionId === subId && addresses.includes(w.address) && w.removeSentAt === null) Object.assign(w, { removeSentAt: sentAt, removeAnsweredAt: answeredAt });
      }
    };
    // Watched all along by every subscription; never watched; added mid-run; removed mid-run; changed on the
    // primary while its replica lags, just before the failover.
    const steady = [freshAddress(), freshAddress(), freshAddress()];
    const never = [freshAddress(), freshAddress()];
    const addedMid = freshAddress();
    const removedMid = freshAddress();
    const addedAtFailover = freshAddress();
    const removedAtFailover = freshAddress();
    const addressLabels = new Map<string, string>([
      ...steady.map((a): [string, string] => [a, "an address watched all along"]),
      ...never.map((a): [string, string] => [a, "an address never watched"]),
      [addedMid, "the address added mid-run"],
      [removedMid, "the address removed mid-run"],
      [addedAtFailover, "the address added just before the Redis failover"],
      [removedAtFailover, "the address removed just before the Redis failover"],
    ]);
    for (const sub of [all, final, head]) await watch(sub.id, [...steady, removedMid, removedAtFailover]);

    step("subscriptions and their addresses made");
    // --- Both matchers must have started their streams before a transfer counts (they begin at the node's head).
    let sampler = new SQL(databaseUrl, { max: 1, connectionTimeout: 2, idleTimeout: 5 });
    cleanups.push(() => sampler.close());
    const checkpoints: CheckpointSample[] = [];
    const sample = async (): Promise<CheckpointSample | null> => {
      try {
        const [h] = (await sampler`SELECT block_number FROM matcher_checkpoints WHERE chain_id = ${CHAIN}`) as { block_number: string }[];
        const [s] = (await sampler`SELECT block_number FROM matcher_solidified_checkpoints WHERE chain_id = ${CHAIN}`) as { block_number: string }[];
        const point = { at: Date.now(), head: h ? Number(h.block_number) : null, solid: s ? Number(s.block_number) : null };
        checkpoints.push(point);
        return point;
      } catch {
        // PostgreSQL restarting: a new pool once it is back.
        await sampler.close().catch(() => {});
        sampler = new SQL(databaseUrl, { max: 1, connectionTimeout: 2, idleTimeout: 5 });
        return null;
      }
    };
    await until("the matcher's head and solidified checkpoints", async () => {
      const s = await sample();
      return s && s.head !== null && s.solid !== null;
    }, 180_000, 250);
    let sampling = true;
    const sampled = (async () => {
      while (sampling) {
        await sample();
        await Bun.sleep(200);
      }
    })();
    say(`stack up in ${((Date.now() - started) / 1000).toFixed(1)} s; faults begin`);

    // --- The phase: transfers every ~block, and the fault timeline.
    const transfers: MadeTransfer[] = [];
    const submit = async (specs: { to: string; result?: string; type?: "trx" | "trc20" }[]) => {
      const at = Date.now();
      const body = {
        transfers: specs.map((s) => {
          const type = s.type ?? (random() < 0.5 ? "trx" : "trc20");
          return { type, from: freshAddress(), to: s.to, amount: String(1_000 + Math.floor(random() * 1_000_000)), ...(s.result ? { result: s.result } : {}) };
        }),
      };
      const { txIds } = await simCall<{ txIds: string[] }>("/sim/transfers", body);
      const answered = Date.now();
      txIds.forEach((txId, i) => transfers.push({ txId, to: specs[i]!.to, result: specs[i]!.result ?? "SUCCESS", submittedAt: at, expirationMs: answered + EXPIRATION_MS }));
      return txIds;
    };
    const phaseEnd = Date.now() + opts.phaseMs;
    t0 = Date.now();
    const when = (fraction: number) => t0 + opts.phaseMs * fraction;
    const sleepUntil = async (t: number) => {
      const d = t - Date.now();
      if (d > 0) await Bun.sleep(d);
    };

    let running = true;
    const traffic = (async () => {
      let i = 0;
      while (running) {
        const to = steady[i % steady.length]!;
        const specs: { to: string; result?: string; type?: "trx" | "trc20" }[] = [
          { to },
          { to: never[i % never.length]! },
          { to: addedMid },
          { to: removedMid },
          { to: addedAtFailover },
          { to: removedAtFailover },
        ];
        if (i % 4 === 0) specs.push({ to, result: "REVERT", type: "trc20" });
        await submit(specs).catch((err) => say(`  transfer submit failed: ${err}`));
        i++;
        await Bun.sleep(TRAFFIC_MS * (0.8 + random() * 0.6));
      }
    })();

    // SIGKILL a random service every few seconds, once every service answers again (the supervisor restarts it a
    // second later): one down at a time, as a rolling failure, however slowly the machine starts processes.
    const killer = (async () => {
      const names = supervisor.names();
      while (running) {
        await Bun.sleep(3_000 + random() * 4_000);
        while (running && !(await Promise.all(names.map((n) => supervisor.healthy(n)))).every(Boolean)) await Bun.sleep(500);
        if (!running) break;
        const name = names[Math.floor(random() * names.length)]!;
        supervisor.kill(name);
        step(`SIGKILL ${name}`);
        faults.kills.set(name, (faults.kills.get(name) ?? 0) + 1);
      }
    })();

    const fork = async (depth: number, reinclude: boolean | string[] = true) => {
      try {
        await simCall("/sim/fork", { depth, length: depth + (random() < 0.5 ? 1 : 0), reinclude });
        faults.forks++;
        step(`fork of depth ${depth}${Array.isArray(reinclude) ? " dropping a transfer" : ""}`);
        return true;
      } catch (err) {
        if ((err as { status?: number }).status === 400) {
          faults.forksRefused++;
          step(`fork of depth ${depth} refused (it would replace a solidified block)`);
        }
        else throw err;
        return false;
      }
    };
    /** Every transaction id of the newest `depth` blocks, except `drop`. */
    const keepAllBut = async (depth: number, drop: string[]) => {
      const state = await simCall<SimState>("/sim/state");
      const ids: string[] = [];
      for (let n = state.head.number - depth + 1; n <= state.head.number; n++) {
        const block = await simCall<{ transactions?: { txID: string }[] }>(`/wallet/getblockbynum?num=${n}&visible=true`);
        for (const tx of block.transactions ?? []) if (!drop.includes(tx.txID)) ids.push(tx.txID);
      }
      return ids;
    };
    const blockOf = async (txId: string) => (await simCall<{ blockNumber?: number }>(`/wallet/gettransactioninfobyid?value=${txId}`)).blockNumber;
    /** A transfer to a steady address that a fork then removes for good, once the head stream has broadcasted it. */
    const forkDroppingFresh = async () => {
      const [txId] = await submit([{ to: steady[0]! }]);
      const number = await until("the transfer to drop in a block", () => blockOf(txId!), 10_000, 100).catch(() => undefined);
      if (number === undefined) return;
      await until("its broadcasted", async () => receiver.arrivals().some((a) => a.path === head.path && a.body.includes(txId!)), 4_000, 100).catch(() => {});
      await simCall("/sim/pause", {});
      try {
        const state = await simCall<SimState>("/sim/state");
        const depth = state.head.number - number + 1;
        if (depth >= SOLID_LAG) return;
        if (await fork(depth, await keepAllBut(depth, [txId!]))) faults.drops++;
      } finally {
        await simCall("/sim/resume", {});
      }
    };

    const timeline = (async () => {
      // Receivers failing, hanging and recovering.
      const stretch = async (path: string, mode: "fail" | "hang", from: number, to: number) => {
        await sleepUntil(when(from));
        receiver.setMode(path, mode);
        faults.receiverStretches++;
        step(`receiver ${path}: ${mode}`);
        await sleepUntil(when(to));
        receiver.setMode(path, "ok");
        step(`receiver ${path}: ok`);
      };
      const nodeStretch = async (mode: "429" | "timeout", from: number, to: number) => {
        await sleepUntil(when(from));
        node.setMode(mode);
        faults.nodeStretches++;
        step(`node: ${mode}`);
        await sleepUntil(when(to));
        node.setMode("ok");
        step("node: ok");
      };
      const paths = { all: all.path, final: final.path, head: head.path };
      const scheduled = [
        ...RECEIVER_OUTAGES.map((o) => stretch(paths[o.sub], o.mode, o.from, o.to)),
        nodeStretch("429", 0.14, 0.2),
        nodeStretch("timeout", 0.84, 0.94),
      ];
      // Forks: shallow ones re-including everything, one dropping a broadcasted transfer, a deep one near the
      // solidified head.
      await sleepUntil(when(0.12));
      await fork(1);
      // Right after the node's 429s: a fork as deep as the node allows, replacing blocks 19 to 21 below the head.
      await sleepUntil(when(0.2));
      await fork(SOLID_LAG - 1);
      await sleepUntil(when(0.22));
      await forkDroppingFresh();
      await sleepUntil(when(0.26));
      await unwatch(all.id, [removedMid]);
      await watch(all.id, [addedMid]);
      await fork(2);
      // A fork while no matcher runs: both down, the branch replaced (and a broadcasted transfer dropped), the
      // solidified head passing the fork point before they are back.
      await sleepUntil(when(0.34));
      const [early] = await submit([{ to: steady[1]! }]);
      await until("its broadcasted", async () => receiver.arrivals().some((a) => a.path === head.path && a.body.includes(early!)), 5_000, 100).catch(() => {});
      for (const m of ["matcher-1", "matcher-2"]) {
        supervisor.hold(m);
        supervisor.kill(m);
      }
      step("both matchers down");
      await Bun.sleep(1_500);
      await simCall("/sim/pause", {});
      try {
        const number = await blockOf(early!);
        const state = await simCall<SimState>("/sim/state");
        const depth = number === undefined ? 3 : Math.min(SOLID_LAG - 1, state.head.number - number + 1);
        if (await fork(depth, await keepAllBut(depth, [early!]))) faults.drops++;
      } finally {
        await simCall("/sim/resume", {});
      }
      await Bun.sleep(BLOCK_MS * (SOLID_LAG + 2));
      for (const m of ["matcher-1", "matcher-2"]) supervisor.resume(m);
      step("both matchers back");
      // Redis failover: the replica stops following, watch changes land on the primary only, the replica is promoted.
      await sleepUntil(when(0.45));
      redis.lagReplica();
      step("the Redis replica stops following the primary");
      await Bun.sleep(300);
      for (const sub of [all, final, head]) {
        await watch(sub.id, [addedAtFailover]);
        await unwatch(sub.id, [removedAtFailover]);
      }
      await Bun.sleep(500);
      await redis.failover();
      redisLb.setTargets([redis.replicaPort]);
      redisLb.cutAll();
      faults.failovers++;
      step("Redis failed over to the replica");
      await sleepUntil(when(0.52));
      await fork(3);
      // PostgreSQL restarted (a crash: immediate stop, recovery at start).
      await sleepUntil(when(0.65));
      step("PostgreSQL crashes");
      await pg.restart({ mode: "immediate", downMs: 2_000 });
      faults.pgRestarts++;
      step("PostgreSQL back");
      await sleepUntil(when(0.8));
      await fork(SOLID_LAG - 1);
      await forkDroppingFresh();
      await Promise.all(scheduled);
    })();

    // The phase lasts at least its length, and until the timeline's last fault (a stalled API call delays it).
    await timeline;
    await sleepUntil(phaseEnd);
    running = false;
    await Promise.all([traffic, killer]);
    const lastTransferBlock = (await simCall<SimState>("/sim/state")).head.number + 1;
    say(`faults over at ${((Date.now() - started) / 1000).toFixed(1)} s; draining`);

    // --- The drain: every service back, the solidified head past the last transfer, the dropped transfers expired
    // (the simulator's clock moved a minute on), then wait for what is expected to arrive.
    for (const name of supervisor.names()) supervisor.resume(name);
    await until("the solidified head past the last transfer", async () => (await simCall<SimState>("/sim/state")).solid.number > lastTransferBlock, 60_000, 250);
    await simCall("/sim/produce", { count: 1, advanceMs: EXPIRATION_MS + 1_000 });
    const afterAdvance = (await simCall<SimState>("/sim/state")).head.number;
    const record = async (): Promise<RunRecord> => {
      const canonicalTx = new Map<string, { blockNumber: number; blockHash: string }>();
      const canonicalBlocks = new Map<number, string>();
      const hashOf = async (n: number) => {
        if (!canonicalBlocks.has(n)) canonicalBlocks.set(n, (await simCall<{ blockID?: string }>(`/wallet/getblockbynum?num=${n}&visible=true`)).blockID ?? "");
        return canonicalBlocks.get(n)!;
      };
      for (const t of transfers) {
        const n = await blockOf(t.txId);
        if (n !== undefined) canonicalTx.set(t.txId, { blockNumber: n, blockHash: await hashOf(n) });
      }
      const requests = receiver.arrivals();
      for (const r of requests) {
        const n = (JSON.parse(r.body) as { data?: { blockNumber?: number } }).data?.blockNumber;
        if (typeof n === "number") await hashOf(n);
      }
      const rollbacks = supervisor.logs
        .filter((l) => l.service.startsWith("matcher") && l.record.msg === "fork: rolled back to the common ancestor")
        .map((l) => ({ at: l.at, ancestor: Number(l.record.ancestor) }));
      const state = await simCall<SimState>("/sim/state");
      return { addressLabels, subscriptions, transfers, watches, canonicalTx, canonicalBlocks, finalSolidTimestampMs: state.solid.timestamp, requests, checkpoints: [...checkpoints], rollbacks };
    };
    // Until every expected delivery came, or nothing more can come (the solidified stream past the last block and no
    // event pending): a miss is then final, not late. The deadline only bounds a run whose events stay pending.
    const pendingNow = async () => {
      try {
        const [row] = (await sampler`SELECT count(*) FILTER (WHERE NOT held) AS pending, count(*) FILTER (WHERE held) AS held FROM event_deliveries WHERE status = 'pending'`) as { pending: string; held: string }[];
        return { pending: Number(row!.pending), held: Number(row!.held) };
      } catch {
        return null;
      }
    };
    const drainStarted = Date.now();
    const drainEnd = drainStarted + (opts.drainMs ?? DRAIN_MS);
    let drained = "its deadline passed";
    let results = checkInvariants(await record());
    while (Date.now() < drainEnd) {
      const now = checkpoints.at(-1);
      const solidPast = (now?.solid ?? 0) > afterAdvance + 1 && (now?.head ?? 0) > afterAdvance + 1;
      if (solidPast && results[0]!.broken === 0) {
        drained = "every expected delivery came";
        break;
      }
      if (solidPast && (await pendingNow())?.pending === 0) {
        drained = "nothing was pending any more";
        break;
      }
      await Bun.sleep(2_000);
      results = checkInvariants(await record());
    }
    sampling = false;
    await sampled;
    // A last look after a settling pause: late duplicates or contradictions count too.
    await Bun.sleep(1_000);
    const last = await record();
    results = checkInvariants(last);
    const left = await pendingNow();
    const progress = checkpoints.findLast((c) => c.head !== null && c.solid !== null) ?? { head: null, solid: null };
    const missed = results[0]!.broken > 0
      ? await classifyMissed(sampler, expectedDeliveries(last).filter((e) => !e.acknowledged), last.requests, progress, t0).catch((err) => {
          say(`  the missed deliveries could not be classified: ${err}`);
          return [];
        })
      : [];

    const requests = receiver.arrivals();
    const summary = [
      `seed ${seed}; ${transfers.length} transfers made, ${requests.length} requests received (${requests.filter((r) => r.status !== null && r.status < 300).length} acknowledged, ${requests.filter((r) => !r.verified).length} unverified)`,
      `SIGKILLs: ${[...faults.kills].map(([n, c]) => `${n}×${c}`).join(" ") || "none"}; starts ${[...supervisor.starts].map(([n, c]) => `${n}×${c}`).join(" ")}`,
      `forks ${faults.forks} (${faults.drops} dropping a broadcasted transfer, ${faults.forksRefused} refused at the solidified head); rollbacks logged ${supervisor.logs.filter((l) => l.record.msg === "fork: rolled back to the common ancestor").length}`,
      `Redis failovers ${faults.failovers}; PostgreSQL restarts ${faults.pgRestarts}; receiver outages ${faults.receiverStretches}; node stretches ${faults.nodeStretches} (429 answered ${node.counts["429"]}, held to timeout ${node.counts.timeout})`,
      `checkpoint samples ${checkpoints.length}; matchers at head ${progress.head}, solidified ${progress.solid}`,
      `drain ${((Date.now() - drainStarted) / 1000).toFixed(0)} s, ended as ${drained}; events pending at its end ${left ? `${left.pending} (and ${left.held} held)` : "unknown (PostgreSQL did not answer)"}`,
    ];
    return { results, summary, seconds: (Date.now() - started) / 1000, missed };
  } finally {
    await cleanup();
    if (opts.logFile && services) {
      await Bun.write(opts.logFile, services.logs.map((l) => JSON.stringify({ service: l.service, at: new Date(l.at).toISOString(), ...l.record })).join("\n") + "\n");
    }
  }
}
