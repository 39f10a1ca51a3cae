// Queue destinations against the real brokers: RabbitMQ (127.0.0.1:5672) and NATS JetStream (127.0.0.1:4222).
// A message carries the payload and the Standard Webhooks headers, and verifies with the standardwebhooks library.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { enqueueTransfers, startDeliveryBed, waitForEvent, type DeliveryBed } from "../../support/delivery.ts";
import { addBroker, NATS_URL, natsStream, RABBIT_URL, rabbitRoute, randomName, startPrivateNats, subscribeTo } from "../../support/brokers.ts";
import { until } from "../../support/wait.ts";

let bed: DeliveryBed;
const rabbit = randomName("rabbit");
const nats = randomName("nats");

beforeAll(async () => {
  bed = await startDeliveryBed();
  await addBroker(bed, rabbit, "amqp", RABBIT_URL);
  await addBroker(bed, nats, "nats", NATS_URL);
}, 60_000);
afterAll(async () => {
  await bed?.stop();
}, 60_000);

test("AMQP: persistent, message_id = event id, application/json, signed headers; the event is delivered with responseBody acked", async () => {
  const route = await rabbitRoute();
  try {
    const sub = await subscribeTo(bed, { type: "amqp", broker: rabbit, exchange: route.exchange, routingKey: route.routingKey });
    const { ids } = await enqueueTransfers(bed, sub.subscriptionId, 3, 0);
    await until("3 AMQP messages", async () => route.received.length >= 3, 20_000);
    for (const id of ids) {
      const ev = await waitForEvent(bed, { ...sub, eventId: id }, (e) => e.status === "delivered");
      expect(ev.responseStatus).toBeUndefined();
      expect(ev.responseBody).toBe("acked");
      // The attempt: a success has no error, and the broker's answer is its response body (docs: issue 13's attempts).
      const atts = await bed.delivery.listAttempts({ keyId: sub.keyId, subscriptionId: sub.subscriptionId, eventId: id, limit: 10, pageToken: "" });
      expect(atts.items.map((a) => [a.responseStatus, a.responseBody, a.error])).toEqual([[undefined, "acked", undefined]]);
      const msg = route.received.find((m) => m.messageId === id)!;
      expect(msg.body).toBe(ev.payloadJson);
      expect(msg.contentType).toBe("application/json");
      expect(msg.persistent).toBe(true);
      expect(msg.headers["webhook-id"]).toBe(id);
      const headers = Object.fromEntries(Object.entries(msg.headers).map(([k, v]) => [k, String(v)]));
      expect(new Webhook(sub.secret).verify(msg.body, headers)).toEqual(JSON.parse(msg.body));
    }
  } finally {
    await route.close();
  }
});

test("NATS: a JetStream message with Nats-Msg-Id = event id and the signed headers; responseBody acked", async () => {
  const stream = await natsStream();
  try {
    const sub = await subscribeTo(bed, { type: "nats", broker: nats, subject: stream.subject });
    const { ids } = await enqueueTransfers(bed, sub.subscriptionId, 3, 10);
    for (const id of ids) {
      const ev = await waitForEvent(bed, { ...sub, eventId: id }, (e) => e.status === "delivered");
      expect(ev.responseStatus).toBeUndefined();
      expect(ev.responseBody).toBe("acked");
    }
    const msgs = await stream.messages();
    expect(msgs.map((m) => m.headers!.get("Nats-Msg-Id")).sort()).toEqual([...ids].sort());
    for (const m of msgs) {
      const headers = { "webhook-id": m.headers!.get("webhook-id"), "webhook-timestamp": m.headers!.get("webhook-timestamp"), "webhook-signature": m.headers!.get("webhook-signature") };
      expect(headers["webhook-id"]).toBe(m.headers!.get("Nats-Msg-Id"));
      expect(m.headers!.get("content-type")).toBe("application/json");
      expect(new Webhook(sub.secret).verify(m.string(), headers)).toEqual(JSON.parse(m.string()));
    }
  } finally {
    await stream.close();
  }
});

test("AMQP: an unroutable message (no queue bound to the key) is a failed attempt: returned: NO_ROUTE", async () => {
  const route = await rabbitRoute();
  try {
    const sub = await subscribeTo(bed, { type: "amqp", broker: rabbit, exchange: route.exchange, routingKey: "nobody-listens" });
    const res = await bed.delivery.createTestEvent({ keyId: sub.keyId, subscriptionId: sub.subscriptionId, kind: "" });
    const ev = await waitForEvent(bed, { ...sub, eventId: res.event!.id }, (e) => e.attempts >= 1);
    expect(ev.responseBody).toBe("returned: NO_ROUTE");
    expect(ev.responseStatus).toBeUndefined();
    const failed = await waitForEvent(bed, { ...sub, eventId: res.event!.id }, (e) => e.status === "failed");
    expect(failed.attempts).toBe(7);
    expect(failed.deliveryCount).toBe(0);
    const atts = await bed.delivery.listAttempts({ keyId: sub.keyId, subscriptionId: sub.subscriptionId, eventId: res.event!.id, limit: 10, pageToken: "" });
    expect(atts.items.map((a) => [a.responseStatus, a.responseBody, a.error])).toEqual(Array(7).fill([undefined, "returned: NO_ROUTE", "returned: NO_ROUTE"]));
  } finally {
    await route.close();
  }
});

test("AMQP: an exchange that does not exist is a failed attempt naming the broker's answer; other exchanges keep flowing", async () => {
  const route = await rabbitRoute();
  try {
    const missing = await subscribeTo(bed, { type: "amqp", broker: rabbit, exchange: randomName("gone"), routingKey: "x" });
    const good = await subscribeTo(bed, { type: "amqp", broker: rabbit, exchange: route.exchange, routingKey: route.routingKey });
    const bad = await bed.delivery.createTestEvent({ keyId: missing.keyId, subscriptionId: missing.subscriptionId, kind: "" });
    const ok = await bed.delivery.createTestEvent({ keyId: good.keyId, subscriptionId: good.subscriptionId, kind: "" });
    const ev = await waitForEvent(bed, { ...missing, eventId: bad.event!.id }, (e) => e.attempts >= 1);
    expect(ev.responseBody).toContain("NOT_FOUND");
    await waitForEvent(bed, { ...good, eventId: ok.event!.id }, (e) => e.status === "delivered");
  } finally {
    await route.close();
  }
});

test("NATS: a subject no stream captures is a failed attempt: no stream", async () => {
  const sub = await subscribeTo(bed, { type: "nats", broker: nats, subject: `${randomName("nostream")}.x` });
  const res = await bed.delivery.createTestEvent({ keyId: sub.keyId, subscriptionId: sub.subscriptionId, kind: "" });
  const ev = await waitForEvent(bed, { ...sub, eventId: res.event!.id }, (e) => e.attempts >= 1);
  expect(ev.responseBody).toBe("no stream");
  expect(ev.responseStatus).toBeUndefined();
  const atts = await bed.delivery.listAttempts({ keyId: sub.keyId, subscriptionId: sub.subscriptionId, eventId: res.event!.id, limit: 10, pageToken: "" });
  const first = atts.items.at(-1)!;
  // A failed queue attempt carries the broker's answer as its responseBody too, and the short reason as its error.
  expect([first.responseStatus, first.responseBody, first.error]).toEqual([undefined, "no stream", "no stream"]);
});

test("manual retry of a delivered queue event sends it again under the same message id", async () => {
  const route = await rabbitRoute();
  try {
    const sub = await subscribeTo(bed, { type: "amqp", broker: rabbit, exchange: route.exchange, routingKey: route.routingKey });
    const res = await bed.delivery.createTestEvent({ keyId: sub.keyId, subscriptionId: sub.subscriptionId, kind: "" });
    const eventId = res.event!.id;
    await waitForEvent(bed, { ...sub, eventId }, (e) => e.status === "delivered");
    await bed.delivery.retryEvent({ keyId: sub.keyId, subscriptionId: sub.subscriptionId, eventId });
    const ev = await waitForEvent(bed, { ...sub, eventId }, (e) => e.status === "delivered" && e.deliveryCount === 2);
    expect(ev.responseBody).toBe("acked");
    await until("the second copy", async () => route.received.length >= 2, 10_000);
    expect(route.received.map((m) => m.messageId)).toEqual([eventId, eventId]);
  } finally {
    await route.close();
  }
});

test("NATS: a token in the broker URL (nats://TOKEN@host) is the token the server requires", async () => {
  const server = await startPrivateNats({ token: randomName("tok") });
  const stream = await natsStream(server.url);
  try {
    const name = randomName("nats-token");
    await addBroker(bed, name, "nats", server.url);
    const sub = await subscribeTo(bed, { type: "nats", broker: name, subject: stream.subject });
    const res = await bed.delivery.createTestEvent({ keyId: sub.keyId, subscriptionId: sub.subscriptionId, kind: "" });
    const ev = await waitForEvent(bed, { ...sub, eventId: res.event!.id }, (e) => e.attempts >= 1);
    expect([ev.status, ev.responseBody]).toEqual(["delivered", "acked"]);
    expect((await stream.messages()).map((m) => m.headers!.get("Nats-Msg-Id"))).toEqual([res.event!.id]);
  } finally {
    await stream.close();
    await server.close();
  }
});
