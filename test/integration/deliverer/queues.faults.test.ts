// Queue destinations when the broker misbehaves. RabbitMQ is shared by everyone testing on this machine, so it is
// taken away through a TCP proxy between the deliverer and it; NATS is a private nats-server this file kills and
// starts again. No event may be lost: attempts fail, then succeed on the schedule.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { enqueueTransfers, startDeliveryBed, waitForEvent, type DeliveryBed } from "../../support/delivery.ts";
import { addBroker, natsStream, rabbitRoute, randomName, startPrivateNats, subscribeTo, type PrivateNats } from "../../support/brokers.ts";
import { startTcpProxy, type TcpProxy } from "../../support/tcp-proxy.ts";
import { until } from "../../support/wait.ts";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";

let bed: DeliveryBed;
let proxy: TcpProxy;
let privateNats: PrivateNats;
const rabbit = randomName("rabbit-proxied");
const nats = randomName("nats-private");

beforeAll(async () => {
  // Slow enough that an outage of a second or two falls inside the schedule, fast enough for a test.
  bed = await startDeliveryBed({ env: { RETRY_SCHEDULE: "0,300ms,600ms,1s,1s,2s,2s", DELIVERY_TIMEOUT_MS: "1500" } });
  proxy = await startTcpProxy({ hostname: "127.0.0.1", port: 5672 });
  privateNats = await startPrivateNats();
  await addBroker(bed, rabbit, "amqp", `amqp://guest:guest@127.0.0.1:${proxy.port}/`);
  await addBroker(bed, nats, "nats", privateNats.url);
}, 60_000);

afterAll(async () => {
  await bed?.stop();
  await proxy?.close();
  await privateNats?.close();
}, 60_000);

test("RabbitMQ cut and restored mid-run: attempts fail, then every event arrives", async () => {
  const route = await rabbitRoute();
  try {
    const sub = await subscribeTo(bed, { type: "amqp", broker: rabbit, exchange: route.exchange, routingKey: route.routingKey });
    const before = await enqueueTransfers(bed, sub.subscriptionId, 10, 0);
    await until("the first events", async () => route.received.length >= 10, 15_000);
    await proxy.refuse();
    const during = await enqueueTransfers(bed, sub.subscriptionId, 10, 100);
    const failed = await waitForEvent(bed, { ...sub, eventId: during.ids[0]! }, (e) => e.attempts >= 1);
    expect(failed.status).toBe("pending");
    expect(failed.responseBody).toMatch(/connection refused|connection reset|timeout|channel closed/);
    await Bun.sleep(800);
    await proxy.restore();
    for (const id of during.ids) {
      const ev = await waitForEvent(bed, { ...sub, eventId: id }, (e) => e.status === "delivered", 20_000);
      expect(ev.responseBody).toBe("acked");
    }
    await until("every message", async () => new Set(route.received.map((m) => m.messageId)).size >= 20, 10_000);
    expect(new Set(route.received.map((m) => m.messageId))).toEqual(new Set([...before.ids, ...during.ids]));
  } finally {
    await route.close();
  }
}, 60_000);

test("NATS server killed and started again: attempts fail, then every event lands in the stream once", async () => {
  const stream = await natsStream(privateNats.url);
  const sub = await subscribeTo(bed, { type: "nats", broker: nats, subject: stream.subject });
  const before = await enqueueTransfers(bed, sub.subscriptionId, 5, 1000);
  for (const id of before.ids) await waitForEvent(bed, { ...sub, eventId: id }, (e) => e.status === "delivered");
  await stream.nc.close();
  await privateNats.stop();
  const during = await enqueueTransfers(bed, sub.subscriptionId, 5, 1100);
  const failed = await waitForEvent(bed, { ...sub, eventId: during.ids[0]! }, (e) => e.attempts >= 1, 20_000);
  expect(failed.status).toBe("pending");
  expect(failed.responseBody).toMatch(/timeout|connection/);
  await privateNats.start();
  for (const id of during.ids) {
    const ev = await waitForEvent(bed, { ...sub, eventId: id }, (e) => e.status === "delivered", 30_000);
    expect(ev.responseBody).toBe("acked");
  }
  const nc = await connect({ servers: `127.0.0.1:${privateNats.port}` });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(stream.stream);
    expect(info.state.messages).toBe(10);
    const consumer = await jetstream(nc).consumers.get(stream.stream);
    const ids: string[] = [];
    for await (const m of await consumer.fetch({ max_messages: 10, expires: 2_000 })) {
      ids.push(m.headers!.get("Nats-Msg-Id"));
      if (ids.length === 10) break;
    }
    expect(new Set(ids)).toEqual(new Set([...before.ids, ...during.ids]));
    await jsm.streams.delete(stream.stream);
  } finally {
    await nc.close();
  }
}, 90_000);

test("a lost AMQP confirm: the retry sends the same message id again, at most one visible duplicate", async () => {
  const route = await rabbitRoute();
  try {
    const sub = await subscribeTo(bed, { type: "amqp", broker: rabbit, exchange: route.exchange, routingKey: route.routingKey });
    // Warm the connection, then let publishes through while their confirms are lost.
    const warm = await bed.delivery.createTestEvent({ keyId: sub.keyId, subscriptionId: sub.subscriptionId, kind: "" });
    await waitForEvent(bed, { ...sub, eventId: warm.event!.id }, (e) => e.status === "delivered");
    proxy.mute();
    const res = await bed.delivery.createTestEvent({ keyId: sub.keyId, subscriptionId: sub.subscriptionId, kind: "" });
    const eventId = res.event!.id;
    const lost = await waitForEvent(bed, { ...sub, eventId }, (e) => e.attempts >= 1, 20_000);
    expect(lost.status).toBe("pending");
    expect(lost.responseBody).toBe("timeout");
    await proxy.restore();
    const ev = await waitForEvent(bed, { ...sub, eventId }, (e) => e.status === "delivered", 20_000);
    expect(ev.deliveryCount).toBe(1);
    // Each attempt row carries the broker's answer as responseBody, the failed ones too (with the reason as error).
    const atts = await bed.delivery.listAttempts({ keyId: sub.keyId, subscriptionId: sub.subscriptionId, eventId, limit: 10, pageToken: "" });
    const rows = atts.items.map((a) => [a.responseStatus, a.responseBody, a.error]);
    expect(rows[0]).toEqual([undefined, "acked", undefined]);
    expect(rows.at(-1)).toEqual([undefined, "timeout", "timeout"]);
    for (const [, body, error] of rows.slice(1)) expect(body).toBe(error!);
    await until("the copies", async () => route.received.filter((m) => m.messageId === eventId).length >= 1, 10_000);
    await Bun.sleep(300);
    const copies = route.received.filter((m) => m.messageId === eventId);
    expect(copies.length).toBeGreaterThanOrEqual(1);
    expect(copies.length).toBeLessThanOrEqual(2);
    for (const c of copies) expect(c.headers["webhook-id"]).toBe(eventId);
  } finally {
    await route.close();
  }
}, 60_000);

test("a lost NATS ack: the retry carries the same Nats-Msg-Id and the stream keeps one message", async () => {
  const natsProxy = await startTcpProxy({ hostname: "127.0.0.1", port: privateNats.port });
  const name = randomName("nats-proxied");
  await addBroker(bed, name, "nats", `nats://127.0.0.1:${natsProxy.port}`);
  const stream = await natsStream(privateNats.url);
  try {
    const sub = await subscribeTo(bed, { type: "nats", broker: name, subject: stream.subject });
    const warm = await bed.delivery.createTestEvent({ keyId: sub.keyId, subscriptionId: sub.subscriptionId, kind: "" });
    await waitForEvent(bed, { ...sub, eventId: warm.event!.id }, (e) => e.status === "delivered");
    natsProxy.mute();
    const res = await bed.delivery.createTestEvent({ keyId: sub.keyId, subscriptionId: sub.subscriptionId, kind: "" });
    const eventId = res.event!.id;
    const lost = await waitForEvent(bed, { ...sub, eventId }, (e) => e.attempts >= 1, 20_000);
    expect(lost.status).toBe("pending");
    expect(lost.responseBody).toBe("timeout");
    await natsProxy.restore();
    await waitForEvent(bed, { ...sub, eventId }, (e) => e.status === "delivered", 30_000);
    const msgs = await stream.messages();
    expect(msgs.map((m) => m.headers!.get("Nats-Msg-Id"))).toEqual([warm.event!.id, eventId]);
  } finally {
    await stream.close();
    await natsProxy.close();
  }
}, 60_000);

test("a slow AMQP consumer (one message at a time, 20 ms each) gets every event; delivery does not wait for it", async () => {
  const route = await rabbitRoute({ consume: false });
  try {
    const sub = await subscribeTo(bed, { type: "amqp", broker: rabbit, exchange: route.exchange, routingKey: route.routingKey });
    const made = await enqueueTransfers(bed, sub.subscriptionId, 100, 2000);
    for (const id of made.ids) await waitForEvent(bed, { ...sub, eventId: id }, (e) => e.status === "delivered", 20_000);
    const got: string[] = [];
    await route.channel.prefetch(1);
    await route.channel.consume(route.queue, (msg) => {
      if (!msg) return;
      setTimeout(() => {
        got.push(String(msg.properties.messageId));
        route.channel.ack(msg);
      }, 20);
    });
    await until("the slow consumer to read all", async () => got.length >= 100, 30_000);
    expect(new Set(got)).toEqual(new Set(made.ids));
  } finally {
    await route.close();
  }
}, 60_000);
