// Outcomes are written in batches (deliverer/worker/ flush): one statement carries many events' outcomes and
// attempt rows. A batch that mixes acked publishes with failed ones (returned by RabbitMQ, no JetStream stream)
// records each event's own outcome; a deliverer killed while publishes and outcome writes are in flight loses
// nothing (the claims come back when their leases expire and are published again).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { serveService, type ServedService } from "../../../common/service.ts";
import { enqueueTransfers, spawnDelivererProcess, startDeliveryBed, type DeliveryBed } from "../../support/delivery.ts";
import { addBroker, NATS_URL, natsStream, RABBIT_URL, rabbitRoute, randomName, subscribeTo } from "../../support/brokers.ts";
import { until } from "../../support/wait.ts";

const PER_DESTINATION = 20;

describe("one outcome write with acked and failed publishes", () => {
  let bed: DeliveryBed;
  const rabbit = randomName("rabbit");
  const nats = randomName("nats");

  beforeAll(async () => {
    bed = await startDeliveryBed({
      // A failed attempt's retry is far away, so the first attempt's outcome stays what the test reads. The worker
      // starts once every event is in, and waits long enough to write all their outcomes in one statement.
      env: { RETRY_SCHEDULE: "0,10m,10m,10m,10m,10m,10m" },
      delivererDeps: { startWorker: false, worker: { flushSize: 1_000, flushMs: 3_000 } },
    });
    await addBroker(bed, rabbit, "amqp", RABBIT_URL);
    await addBroker(bed, nats, "nats", NATS_URL);
  }, 60_000);

  afterAll(async () => {
    await bed?.stop();
  }, 60_000);

  test("each event gets its own status, responseBody and attempt row", async () => {
    const route = await rabbitRoute();
    const stream = await natsStream();
    try {
      const subs = {
        amqpAcked: await subscribeTo(bed, { type: "amqp", broker: rabbit, exchange: route.exchange, routingKey: route.routingKey }),
        amqpReturned: await subscribeTo(bed, { type: "amqp", broker: rabbit, exchange: route.exchange, routingKey: "nobody-listens" }),
        natsAcked: await subscribeTo(bed, { type: "nats", broker: nats, subject: stream.subject }),
        natsNoStream: await subscribeTo(bed, { type: "nats", broker: nats, subject: `${randomName("nostream").replace(/-/g, "_")}.events` }),
      };
      const ids: Record<keyof typeof subs, string[]> = { amqpAcked: [], amqpReturned: [], natsAcked: [], natsNoStream: [] };
      for (const [name, sub] of Object.entries(subs) as [keyof typeof subs, { subscriptionId: string }][]) {
        ids[name] = (await enqueueTransfers(bed, sub.subscriptionId, PER_DESTINATION, 0)).ids;
      }
      bed.deliverer!.worker.start();
      await until("every event attempted once", async () => {
        const [row] = (await bed.sql`SELECT count(*)::int AS n FROM event_deliveries WHERE attempts = 1`) as { n: number }[];
        return row!.n === 4 * PER_DESTINATION;
      }, 30_000);

      const rows = (await bed.sql`SELECT event_id AS id, status, attempts, delivery_count, response_status, response_body, next_attempt_at, updated_at
        FROM event_deliveries`) as { id: string; status: string; attempts: number; delivery_count: number; response_status: number | null; response_body: string; next_attempt_at: Date | null; updated_at: Date }[];
      // One statement wrote them all (its now() is the one updated_at), so the batch really mixed the outcomes.
      expect(new Set(rows.map((r) => new Date(r.updated_at).getTime())).size).toBe(1);
      const byId = new Map(rows.map((r) => [r.id, r]));
      const expectOutcome = (list: string[], want: { status: string; body: string; delivered: number }) => {
        for (const id of list) {
          const r = byId.get(id)!;
          expect({ id, status: r.status, body: r.response_body, deliveries: r.delivery_count, responseStatus: r.response_status }).toEqual({
            id,
            status: want.status,
            body: want.body,
            deliveries: want.delivered,
            responseStatus: null,
          });
          if (want.status === "pending") expect(new Date(r.next_attempt_at!).getTime()).toBeGreaterThan(Date.now() + 5 * 60_000);
          else expect(r.next_attempt_at).toBeNull();
        }
      };
      expectOutcome(ids.amqpAcked, { status: "delivered", body: "acked", delivered: 1 });
      expectOutcome(ids.natsAcked, { status: "delivered", body: "acked", delivered: 1 });
      expectOutcome(ids.amqpReturned, { status: "pending", body: "returned: NO_ROUTE", delivered: 0 });
      expectOutcome(ids.natsNoStream, { status: "pending", body: "no stream", delivered: 0 });

      // Exactly one attempt row per event, its `ok` and reason matching the event's outcome.
      const attempts = (await bed.sql`SELECT event_id, ok, error, response_status, response_body FROM delivery_attempts`) as {
        event_id: string; ok: boolean; error: string | null; response_status: number | null; response_body: string | null;
      }[];
      expect(attempts.length).toBe(4 * PER_DESTINATION);
      const attemptOf = new Map(attempts.map((a) => [a.event_id, a]));
      expect(attemptOf.size).toBe(4 * PER_DESTINATION);
      // A queue attempt's response_body is the broker's answer, failed or not; its status always null.
      for (const id of [...ids.amqpAcked, ...ids.natsAcked]) {
        expect(attemptOf.get(id)).toMatchObject({ ok: true, error: null, response_status: null, response_body: "acked" });
      }
      for (const id of ids.amqpReturned) {
        expect(attemptOf.get(id)).toMatchObject({ ok: false, error: "returned: NO_ROUTE", response_status: null, response_body: "returned: NO_ROUTE" });
      }
      for (const id of ids.natsNoStream) {
        expect(attemptOf.get(id)).toMatchObject({ ok: false, error: "no stream", response_status: null, response_body: "no stream" });
      }

      // The brokers hold exactly the acked messages.
      await until("the routed AMQP messages", async () => route.received.length >= PER_DESTINATION, 10_000);
      expect(route.received.map((m) => m.messageId).sort()).toEqual([...ids.amqpAcked].sort());
      expect((await stream.messages()).map((m) => m.headers!.get("Nats-Msg-Id")).sort()).toEqual([...ids.natsAcked].sort());
    } finally {
      await route.close();
      await stream.close();
    }
  }, 60_000);
});

describe("a deliverer killed mid-batch", () => {
  let bed: DeliveryBed;
  let registryServed: ServedService;
  const children: ReturnType<typeof Bun.spawn>[] = [];
  const rabbit = randomName("rabbit");

  beforeAll(async () => {
    // The in-process deliverer only answers Enqueue; the worker runs in the child processes. A 2 s attempt
    // timeout makes the killed worker's leases (2 × timeout + 10 s) expire within the test.
    bed = await startDeliveryBed({ delivererDeps: { startWorker: false } });
    registryServed = await serveService(bed.registry, 0);
    await addBroker(bed, rabbit, "amqp", RABBIT_URL);
  }, 60_000);

  afterAll(async () => {
    for (const c of children) c.kill("SIGKILL");
    await registryServed?.stop();
    await bed?.stop();
  }, 60_000);

  function spawnDeliverer() {
    const child = spawnDelivererProcess(bed, `http://127.0.0.1:${registryServed.http.port}`);
    children.push(child);
    return child;
  }

  test("SIGKILL while publishes and outcome writes are in flight, then restart: every event published and delivered", async () => {
    const route = await rabbitRoute();
    try {
      const sub = await subscribeTo(bed, { type: "amqp", broker: rabbit, exchange: route.exchange, routingKey: route.routingKey });
      const ids = (await enqueueTransfers(bed, sub.subscriptionId, 3_000, 0)).ids;
      const first = spawnDeliverer();
      await until("the first messages", async () => route.received.length >= 300, 30_000);
      first.kill("SIGKILL");
      await first.exited;
      const [atKill] = (await bed.sql`SELECT count(*)::int AS n FROM event_deliveries WHERE status = 'delivered'`) as { n: number }[];
      expect(atKill!.n).toBeLessThan(ids.length);

      const second = spawnDeliverer();
      await until("every event delivered", async () => {
        const [row] = (await bed.sql`SELECT count(*)::int AS n FROM event_deliveries WHERE status = 'delivered'`) as { n: number }[];
        return row!.n === ids.length;
      }, 60_000);
      second.kill("SIGTERM");
      expect(await second.exited).toBe(0);
      // At least once: every event reached the queue, a copy per attempt at most (same message_id).
      await until("every message in the queue", async () => new Set(route.received.map((m) => m.messageId)).size === ids.length, 10_000);
      const [row] = (await bed.sql`SELECT count(*)::int AS n FROM event_deliveries WHERE status <> 'delivered' OR delivery_count <> 1`) as { n: number }[];
      expect(row!.n).toBe(0);
    } finally {
      await route.close();
    }
  }, 120_000);
});
