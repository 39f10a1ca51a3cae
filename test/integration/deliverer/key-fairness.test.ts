// Fairness between customers (issue 30, item 4): key A has twenty destinations (twenty listeners, each its own
// host:port, the deliverer's unit of per-host slots) that answer only after 14 s, and a flood of events for them; key
// B's burst to a healthy destination meanwhile is delivered completely before A's first answer comes back. Per-host
// slots alone let A take 20 × 32 attempts, more than the process's 512, so B waited for A's answers; the per-key cap
// (QUOTA_DELIVERIES_IN_FLIGHT) holds A to its share, counted here at A's receivers.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import type { Socket } from "node:net";
import { enqueueTransfers, startDeliveryBed, type DeliveryBed } from "../../support/delivery.ts";

const SLOW_MS = 14_000;
const HOSTS = 20;
const KEY_CAP = 40;
const A_EVENTS_PER_HOST = 40;
const B_EVENTS = 300;

let bed: DeliveryBed;
const servers: Server[] = [];
const sockets = new Set<Socket>();
const timers = new Set<ReturnType<typeof setTimeout>>();
let inFlight = 0;
let maxInFlight = 0;
let firstAnswerAt = 0;

beforeAll(async () => {
  bed = await startDeliveryBed({
    env: { DELIVERY_TIMEOUT_MS: String(SLOW_MS + 4_000), QUOTA_DELIVERIES_IN_FLIGHT: String(KEY_CAP) },
  });
  for (let i = 0; i < HOSTS; i++) {
    const server = createServer({ cert: bed.pki.cert, key: bed.pki.key, keepAlive: true }, (req, res) => {
      req.resume();
      req.on("end", () => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        // Over once answered or dropped by the deliverer (a timeout under load): then it no longer holds a slot.
        res.on("close", () => inFlight--);
        const t = setTimeout(() => {
          timers.delete(t);
          firstAnswerAt ||= Date.now();
          res.writeHead(200, { "content-type": "text/plain" }).end("ok");
        }, SLOW_MS);
        timers.add(t);
      });
    });
    server.on("secureConnection", (s: Socket) => {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    servers.push(server);
  }
}, 60_000);

afterAll(async () => {
  for (const t of timers) clearTimeout(t);
  for (const s of sockets) s.destroy();
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  await bed?.stop();
}, 60_000);

async function delivered(subscriptionId: string): Promise<number> {
  const [row] = (await bed.sql`SELECT count(*)::int AS n FROM event_deliveries WHERE subscription_id = ${subscriptionId} AND status = 'delivered'`) as { n: number }[];
  return row!.n;
}

test("key B's burst is delivered while key A's twenty slow hosts hold only A's cap of attempts", async () => {
  const a = await bed.keys.createApiKey({ name: "abuser", chains: [] });
  const aSubs: string[] = [];
  for (const server of servers) {
    const res = await bed.subscriptions.createSubscription({
      keyId: a.key!.id,
      destination: { type: "https", url: `https://localhost:${(server.address() as AddressInfo).port}/slow` },
      events: ["wallet.transfer.broadcasted"],
      status: "",
      description: "",
    });
    aSubs.push(res.subscription!.id);
  }
  const b = await bed.subscribe("/b");

  // A's flood first, due first.
  let offset = 0;
  for (const sub of aSubs) {
    await enqueueTransfers(bed, sub, A_EVENTS_PER_HOST, offset);
    offset += A_EVENTS_PER_HOST;
  }
  const deadline = Date.now() + 10_000;
  while (inFlight < KEY_CAP && Date.now() < deadline) await Bun.sleep(20);
  expect(inFlight).toBe(KEY_CAP);
  const bStarted = Date.now();
  await enqueueTransfers(bed, b.subscriptionId, B_EVENTS, 1_000_000);

  while ((await delivered(b.subscriptionId)) < B_EVENTS && firstAnswerAt === 0) await Bun.sleep(20);
  const bDoneAt = Date.now();
  expect(await delivered(b.subscriptionId)).toBe(B_EVENTS);
  // Done while every one of A's first attempts was still waiting for its answer.
  expect(firstAnswerAt).toBe(0);
  expect(inFlight).toBeGreaterThan(0);
  expect(maxInFlight).toBeLessThanOrEqual(KEY_CAP);
  console.log(`key B: ${B_EVENTS} deliveries in ${bDoneAt - bStarted} ms while key A held ${maxInFlight} attempts (cap ${KEY_CAP})`);
}, 90_000);
