// `bun run bench fairness`: one customer's abuse against another's deliveries (issue 30, item 4). Key B sends a steady
// trickle of events to a healthy HTTPS destination; its latency (Enqueue → arrival at its receiver) is measured alone,
// then while key A floods twenty destinations (twenty listeners, each its own host:port) that answer only after 14 s,
// with A held to the per-key cap on attempts in flight (QUOTA_DELIVERIES_IN_FLIGHT, its default) and, for the
// comparison, with the cap raised above the process's 512 slots (the behaviour before it: per-host slots only).
// Each phase runs on its own database and Redis DB; the receivers run in this process. Goal: B's p99 ≤ 1 s under abuse.
import { createServer, type Server } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { setLogLevel } from "../common/logger.ts";
import { QUOTA_DEFAULTS } from "../common/quotas.ts";
import { inProcessTransport } from "../common/rpc.ts";
import { createDeliverer } from "../deliverer/index.ts";
import { DeliveryService, NewEventSchema } from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import { ApiKeyService } from "../gen/webhooks/registry/v1/registry_pb.ts";
import { createTestPki, type TestPki } from "../tools/receiver/certs.ts";
import { startBenchRegistry } from "./registry-bed.ts";
import { transfer } from "./transfers.ts";

const SLOW_MS = 14_000;
const A_HOSTS = 20;
/** A's flood: this many events per host before B starts, then more every tick while B runs. */
const A_INITIAL_PER_HOST = Number(process.env.BENCH_A_EVENTS ?? 250);
const A_PER_TICK = 20;
const TICK_MS = 100;
/** B's trickle: events per tick, for this long. */
const B_PER_TICK = Number(process.env.BENCH_B_PER_TICK ?? 10);
const B_MS = Number(process.env.BENCH_B_MS ?? 10_000);
/** How long B's last events may take to arrive before they are counted as not delivered. */
const B_WAIT_MS = 60_000;

interface Listener {
  server: Server;
  port: number;
  close(): Promise<void>;
}

/**
 * An HTTPS listener answering every POST after `delayMs` (0: at once), calling `onArrive` with its webhook-id and
 * `onDone` once the request is over (answered, or dropped by the client).
 */
async function listen(pki: TestPki, delayMs: number, onArrive: (webhookId: string) => void = () => {}, onDone: () => void = () => {}): Promise<Listener> {
  const sockets = new Set<Socket>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const server = createServer({ cert: pki.cert, key: pki.key, keepAlive: true }, (req, res) => {
    req.resume();
    req.on("end", () => {
      onArrive(String(req.headers["webhook-id"] ?? ""));
      res.on("close", onDone);
      if (delayMs === 0) {
        res.writeHead(200).end("ok");
        return;
      }
      const t = setTimeout(() => {
        timers.delete(t);
        if (!res.destroyed) res.writeHead(200).end("ok");
      }, delayMs);
      timers.add(t);
    });
  });
  server.on("secureConnection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    async close() {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

interface PhaseResult {
  label: string;
  latencies: number[];
  sent: number;
  aPeak: number;
}

async function phase(pki: TestPki, label: string, abuse: boolean, keyCap: number): Promise<PhaseResult> {
  const bed = await startBenchRegistry("benchfair", {
    DELIVERY_CA_FILE: pki.caFile,
    SSRF_ALLOW_CIDRS: "127.0.0.1/32",
    QUOTA_DELIVERIES_IN_FLIGHT: String(keyCap),
    LOG_LEVEL: "warn",
  });
  const enqueuedAt = new Map<string, number>();
  const latencies: number[] = [];
  const bReceiver = await listen(pki, 0, (id) => {
    const at = enqueuedAt.get(id);
    if (at !== undefined) {
      latencies.push(performance.now() - at);
      enqueuedAt.delete(id);
    }
  });
  let aInFlight = 0;
  let aPeak = 0;
  const aReceivers = abuse
    ? await Promise.all(
        Array.from({ length: A_HOSTS }, () =>
          listen(
            pki,
            SLOW_MS,
            () => {
              aInFlight++;
              aPeak = Math.max(aPeak, aInFlight);
            },
            () => aInFlight--,
          ),
        ),
      )
    : [];
  const deliverer = await createDeliverer(bed.config, { registry: bed.registryTransport });
  const delivery = createClient(DeliveryService, inProcessTransport(deliverer.routes));
  const subscribe = async (keyId: string, port: number) =>
    (await bed.subs.createSubscription({
      keyId,
      destination: { type: "https", url: `https://localhost:${port}/hooks` },
      events: ["wallet.transfer.broadcasted"],
      status: "",
      description: "",
    })).subscription!.id;
  const keys = createClient(ApiKeyService, bed.registryTransport);
  const keyB = (await keys.createApiKey({ name: "B", chains: [] })).key!.id;
  const bSub = await subscribe(keyB, bReceiver.port);
  const aSubs = await Promise.all(aReceivers.map((r) => subscribe(bed.key.key!.id, r.port)));
  let n = 0;
  /** `count` more events for A, spread over its destinations, in one Enqueue as the matcher batches a block's. */
  const enqueueA = async (count: number) => {
    for (let i = 0; i < count; i += 1_000) {
      const events = Array.from({ length: Math.min(1_000, count - i) }, (_, j) =>
        create(NewEventSchema, { subscriptionId: aSubs[(i + j) % aSubs.length]!, kind: "wallet.transfer.broadcasted", transfer: transfer(n++) }),
      );
      await delivery.enqueue({ events });
    }
  };
  try {
    if (abuse) {
      await enqueueA(A_INITIAL_PER_HOST * A_HOSTS);
      // Let A's attempts fill what they may before B starts.
      await Bun.sleep(2_000);
    }
    let sent = 0;
    const started = performance.now();
    while (performance.now() - started < B_MS) {
      const tick = performance.now();
      const events = Array.from({ length: B_PER_TICK }, () => create(NewEventSchema, { subscriptionId: bSub, kind: "wallet.transfer.broadcasted", transfer: transfer(n++) }));
      const at = performance.now();
      const res = await delivery.enqueue({ events });
      for (const id of res.eventIds) enqueuedAt.set(id, at);
      sent += res.eventIds.length;
      if (abuse) await enqueueA(A_PER_TICK);
      await Bun.sleep(Math.max(0, TICK_MS - (performance.now() - tick)));
    }
    const deadline = performance.now() + B_WAIT_MS;
    while (latencies.length < sent && performance.now() < deadline) await Bun.sleep(50);
    return { label, latencies: latencies.sort((x, y) => x - y), sent, aPeak };
  } finally {
    await deliverer.close();
    await Promise.all([bReceiver, ...aReceivers].map((r) => r.close()));
    await bed.close();
  }
}

export default async function bench(): Promise<void> {
  setLogLevel("warn");
  const cap = QUOTA_DEFAULTS.deliveries.value;
  const pki = createTestPki();
  console.log(
    `fairness: key B sends ${B_PER_TICK * (1000 / TICK_MS)} events/s for ${B_MS / 1000} s to a healthy destination; key A floods ` +
      `${A_HOSTS} destinations answering after ${SLOW_MS / 1000} s (${A_INITIAL_PER_HOST} events each, then ${A_PER_TICK} more every ${TICK_MS} ms)`,
  );
  const results: PhaseResult[] = [];
  results.push(await phase(pki, "B alone", false, cap));
  results.push(await phase(pki, `A abusing, per-key cap ${cap}`, true, cap));
  results.push(await phase(pki, "A abusing, no per-key cap (before)", true, 1_000_000));
  const fmt = (ms: number) => (Number.isNaN(ms) ? "—" : `${ms.toFixed(0)} ms`);
  console.log(`${"phase".padEnd(38)} ${"B delivered".padStart(12)} ${"p50".padStart(9)} ${"p99".padStart(9)} ${"max".padStart(9)} ${"A in flight".padStart(12)}`);
  for (const r of results) {
    console.log(
      `${r.label.padEnd(38)} ${`${r.latencies.length}/${r.sent}`.padStart(12)} ${fmt(percentile(r.latencies, 50)).padStart(9)} ` +
        `${fmt(percentile(r.latencies, 99)).padStart(9)} ${fmt(r.latencies.at(-1) ?? NaN).padStart(9)} ${String(r.aPeak).padStart(12)}`,
    );
  }
  const idle = percentile(results[0]!.latencies, 99);
  const capped = percentile(results[1]!.latencies, 99);
  console.log(`B's p99 under abuse (capped) / alone: ${(capped / idle).toFixed(2)}×; goal p99 ≤ 1,000 ms: ${capped <= 1_000 ? "met" : "not met"}`);
}
