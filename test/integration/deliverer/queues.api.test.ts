// Queue destinations through the public HTTP API: every representation returns the destination as given, PUT may
// change the type, and each bad field is invalid_request with its JSON pointer; bad input changes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { SubscriptionJson } from "../../../gateway/render.ts";
import { addOpenBroker } from "../../support/brokers.ts";
import { apiClient, expectError, expectStatus, type ApiClient } from "../../support/http.ts";
import { startStack, TEST_DESTINATION, type Stack } from "../../support/stack.ts";

let stack: Stack;
let api: ApiClient;

const amqpDest = { type: "amqp", broker: "rabbit", exchange: "payments", routingKey: "tron.transfers" };
const natsDest = { type: "nats", broker: "nats-main", subject: "tron.transfers.usdt" };
const events = ["wallet.transfer.broadcasted"];

beforeAll(async () => {
  stack = await startStack();
  await addOpenBroker(stack.registry.store, "rabbit", "amqp", "amqp://guest:guest@127.0.0.1:5672/");
  await addOpenBroker(stack.registry.store, "nats-main", "nats", "nats://127.0.0.1:4222");
  api = apiClient(stack.baseUrl, (await stack.createKey()).key);
});
afterAll(async () => {
  await stack?.stop();
});

async function count(): Promise<number> {
  return (await api.get("/v1/subscriptions?limit=200")).json<{ items: unknown[] }>().items.length;
}

describe("representations", () => {
  test("create, get, list and PUT return an AMQP destination as given (the secret only on create)", async () => {
    const res = await api.post("/v1/subscriptions", { destination: amqpDest, events });
    expectStatus(res, 201);
    const created = res.json<SubscriptionJson>();
    const { secret, ...dest } = created.destination as typeof amqpDest & { secret: string };
    expect(dest).toEqual(amqpDest);
    expect(secret).toMatch(/^whsec_/);
    const got = (await api.get(`/v1/subscriptions/${created.id}`)).json<SubscriptionJson>();
    expect(got.destination as unknown).toEqual(amqpDest);
    const listed = (await api.get("/v1/subscriptions")).json<{ items: SubscriptionJson[] }>().items.find((s) => s.id === created.id)!;
    expect(listed.destination as unknown).toEqual(amqpDest);
  });

  test("a NATS destination, and PUT changing the type https → nats → amqp → https", async () => {
    const res = await api.post("/v1/subscriptions", { destination: { type: "https", url: TEST_DESTINATION }, events });
    expectStatus(res, 201);
    const id = res.json<SubscriptionJson>().id;
    for (const destination of [natsDest, amqpDest, { type: "https", url: TEST_DESTINATION }]) {
      const put = await api.put(`/v1/subscriptions/${id}`, { destination, events });
      expectStatus(put, 200);
      expect(put.json<SubscriptionJson>().destination as unknown).toEqual(destination);
      expect((await api.get(`/v1/subscriptions/${id}`)).json<SubscriptionJson>().destination as unknown).toEqual(destination);
    }
  });

  test("an omitted exchange and routing key are the default exchange and an empty key", async () => {
    const res = await api.post("/v1/subscriptions", { destination: { type: "amqp", broker: "rabbit" }, events });
    expectStatus(res, 201);
    const { secret: _, ...dest } = res.json<SubscriptionJson>().destination as Record<string, string>;
    expect(dest).toEqual({ type: "amqp", broker: "rabbit", exchange: "", routingKey: "" });
  });

  test("the OpenAPI document describes the three destination types", async () => {
    const doc = await (await fetch(`${stack.baseUrl}/openapi.json`)).text();
    for (const word of ["AmqpDestination", "NatsDestination", "routingKey", "subject", "broker"]) expect(doc).toContain(word);
  });
});

describe("invalid destinations (nothing is created)", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["unknown type", { type: "sqs", broker: "rabbit" }, "/destination/type"],
    ["missing broker", { type: "amqp", exchange: "x", routingKey: "y" }, "/destination/broker"],
    ["unknown broker", { ...amqpDest, broker: "nope" }, "/destination/broker"],
    ["malformed broker name", { ...amqpDest, broker: "a b" }, "/destination/broker"],
    ["a nats broker for amqp", { ...amqpDest, broker: "nats-main" }, "/destination/broker"],
    ["an amqp broker for nats", { ...natsDest, broker: "rabbit" }, "/destination/broker"],
    ["exchange with a space", { ...amqpDest, exchange: "my exchange" }, "/destination/exchange"],
    ["exchange of 256 characters", { ...amqpDest, exchange: "e".repeat(256) }, "/destination/exchange"],
    ["exchange not a string", { ...amqpDest, exchange: 5 }, "/destination/exchange"],
    ["routing key of 256 bytes", { ...amqpDest, routingKey: "é".repeat(128) }, "/destination/routingKey"],
    ["routing key with a control character", { ...amqpDest, routingKey: "a\nb" }, "/destination/routingKey"],
    ["missing subject", { type: "nats", broker: "nats-main" }, "/destination/subject"],
    ["subject with *", { ...natsDest, subject: "tron.*" }, "/destination/subject"],
    ["subject with >", { ...natsDest, subject: "tron.>" }, "/destination/subject"],
    ["subject with an empty token", { ...natsDest, subject: "tron..x" }, "/destination/subject"],
    ["subject ending in .", { ...natsDest, subject: "tron." }, "/destination/subject"],
    ["subject with white space", { ...natsDest, subject: "tron x" }, "/destination/subject"],
    ["subject under $JS", { ...natsDest, subject: "$JS.API.STREAM.DELETE.x" }, "/destination/subject"],
    ["subject under _INBOX", { ...natsDest, subject: "_INBOX.abc" }, "/destination/subject"],
    ["subject of 256 bytes", { ...natsDest, subject: "a".repeat(256) }, "/destination/subject"],
  ];
  for (const [name, destination, param] of cases) {
    test(`${name} → invalid_request at ${param}`, async () => {
      const before = await count();
      expectError(await api.post("/v1/subscriptions", { destination, events }), 400, "invalid_request", { param });
      expect(await count()).toBe(before);
    });
  }

  test("an unknown type's message names the types there are (was a schema library's \"expected union value\")", async () => {
    const res = await api.post("/v1/subscriptions", { destination: { type: "sqs" }, events });
    expect(res.json<{ message: string }>().message).toBe("The field /destination/type must be one of https, amqp, nats.");
  });

  test("PUT with a bad queue destination keeps the old destination", async () => {
    const created = (await api.post("/v1/subscriptions", { destination: natsDest, events })).json<SubscriptionJson>();
    expectError(await api.put(`/v1/subscriptions/${created.id}`, { destination: { ...amqpDest, broker: "nats-main" }, events }), 400, "invalid_request", {
      param: "/destination/broker",
    });
    expect((await api.get(`/v1/subscriptions/${created.id}`)).json<SubscriptionJson>().destination as unknown).toEqual(natsDest);
  });
});
