// Broker namespaces across two keys on shared brokers: each key names only the exchanges, queues (through the
// default exchange) and subjects under its own grants, on create and on PUT; a key with no grant sees the broker as
// unknown. Every refusal is invalid_request with the field's JSON pointer, and changes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addOpenBroker } from "../../support/brokers.ts";
import { apiClient, expectError, expectStatus, type ApiClient } from "../../support/http.ts";
import { startStack, TEST_DESTINATION, type Stack } from "../../support/stack.ts";

let stack: Stack;
let alice: ApiClient;
let bob: ApiClient;
let carol: ApiClient;
let carolId: string;
let aliceId: string;
const events = ["wallet.transfer.broadcasted"];

beforeAll(async () => {
  stack = await startStack();
  const store = stack.registry.store;
  await store.addBroker("rabbit", "amqp", "amqp://guest:guest@127.0.0.1:5672/");
  await store.addBroker("nats", "nats", "nats://127.0.0.1:4222");
  const a = await stack.createKey({ name: "alice" });
  const b = await stack.createKey({ name: "bob" });
  const c = await stack.createKey({ name: "carol" });
  [alice, bob, carol, aliceId, carolId] = [apiClient(stack.baseUrl, a.key), apiClient(stack.baseUrl, b.key), apiClient(stack.baseUrl, c.key), a.id, c.id];
  await store.grantBroker({ broker: "rabbit", keyId: a.id, prefix: "alice.", defaultExchange: true });
  await store.grantBroker({ broker: "rabbit", keyId: b.id, prefix: "bob.", defaultExchange: false });
  await store.grantBroker({ broker: "nats", keyId: a.id, prefix: "alice.", defaultExchange: false });
  await store.grantBroker({ broker: "nats", keyId: b.id, prefix: "bob.", defaultExchange: false });
});
afterAll(async () => {
  await stack?.stop();
});

async function subscriptionCount(api: ApiClient): Promise<number> {
  return (await api.get("/v1/subscriptions?limit=200")).json<{ items: unknown[] }>().items.length;
}

describe("NATS subjects", () => {
  test("each key names subjects under its prefix only", async () => {
    expectStatus(await alice.post("/v1/subscriptions", { destination: { type: "nats", broker: "nats", subject: "alice.deposits" }, events }), 201);
    expectStatus(await bob.post("/v1/subscriptions", { destination: { type: "nats", broker: "nats", subject: "bob.deposits" }, events }), 201);
    const before = await subscriptionCount(alice);
    const res = await alice.post("/v1/subscriptions", { destination: { type: "nats", broker: "nats", subject: "bob.deposits" }, events });
    expect(expectError(res, 400, "invalid_request").detail).toEqual({ param: "/destination/subject" });
    expect(await subscriptionCount(alice)).toBe(before);
  });

  test("a prefix is matched as text: alice.x is not under alice-x", async () => {
    const res = await alice.post("/v1/subscriptions", { destination: { type: "nats", broker: "nats", subject: "alice-x.deposits" }, events });
    expect(expectError(res, 400, "invalid_request").detail).toEqual({ param: "/destination/subject" });
  });
});

describe("AMQP exchanges and the default exchange", () => {
  test("a named exchange must lie under the key's prefix", async () => {
    expectStatus(await bob.post("/v1/subscriptions", { destination: { type: "amqp", broker: "rabbit", exchange: "bob.payments", routingKey: "x" }, events }), 201);
    const res = await bob.post("/v1/subscriptions", { destination: { type: "amqp", broker: "rabbit", exchange: "alice.payments", routingKey: "x" }, events });
    expect(expectError(res, 400, "invalid_request").detail).toEqual({ param: "/destination/exchange" });
  });

  test("the default exchange only with a grant for it, and then only queues under the prefix", async () => {
    // bob has no default-exchange grant: the default exchange would let him route into any queue by its name.
    const bobDefault = await bob.post("/v1/subscriptions", { destination: { type: "amqp", broker: "rabbit", exchange: "", routingKey: "bob.queue" }, events });
    expect(expectError(bobDefault, 400, "invalid_request").detail).toEqual({ param: "/destination/exchange" });
    expectStatus(await alice.post("/v1/subscriptions", { destination: { type: "amqp", broker: "rabbit", routingKey: "alice.queue" }, events }), 201);
    const intoBobs = await alice.post("/v1/subscriptions", { destination: { type: "amqp", broker: "rabbit", routingKey: "bob.queue" }, events });
    expect(expectError(intoBobs, 400, "invalid_request").detail).toEqual({ param: "/destination/routingKey" });
  });
});

describe("keys without a grant, grants to every key, PUT", () => {
  test("a key with no grant on a broker gets the answer of an unknown broker", async () => {
    const res = await carol.post("/v1/subscriptions", { destination: { type: "nats", broker: "nats", subject: "carol.x" }, events });
    const unknown = await carol.post("/v1/subscriptions", { destination: { type: "nats", broker: "no-such", subject: "carol.x" }, events });
    const body = expectError(res, 400, "invalid_request");
    expect(body.detail).toEqual({ param: "/destination/broker" });
    expect(body.message).toBe(expectError(unknown, 400, "invalid_request").message.replace("no-such", "nats"));
  });

  test("a grant to every key with {keyId} gives each key its own namespace", async () => {
    await stack.registry.store.grantBroker({ broker: "nats", keyId: "*", prefix: "tenants.{keyId}.", defaultExchange: false });
    expectStatus(await carol.post("/v1/subscriptions", { destination: { type: "nats", broker: "nats", subject: `tenants.${carolId}.deposits` }, events }), 201);
    const res = await carol.post("/v1/subscriptions", { destination: { type: "nats", broker: "nats", subject: `tenants.${aliceId}.deposits` }, events });
    expect(expectError(res, 400, "invalid_request").detail).toEqual({ param: "/destination/subject" });
  });

  test("PUT is held to the same grants, and a refused PUT changes nothing", async () => {
    const created = await bob.post("/v1/subscriptions", { destination: { type: "https", url: TEST_DESTINATION }, events });
    expectStatus(created, 201);
    const id = created.json<{ id: string }>().id;
    const put = await bob.put(`/v1/subscriptions/${id}`, { destination: { type: "nats", broker: "nats", subject: "alice.deposits" }, events });
    expect(expectError(put, 400, "invalid_request").detail).toEqual({ param: "/destination/subject" });
    expect((await bob.get(`/v1/subscriptions/${id}`)).json<{ destination: { type: string } }>().destination.type).toBe("https");
    expectStatus(await bob.put(`/v1/subscriptions/${id}`, { destination: { type: "nats", broker: "nats", subject: "bob.other" }, events }), 200);
  });

  test("revoking a grant refuses new destinations under it (the grant to every key still applies)", async () => {
    expect(await stack.registry.store.revokeBrokerGrant("nats", aliceId)).toBe(1);
    const res = await alice.post("/v1/subscriptions", { destination: { type: "nats", broker: "nats", subject: "alice.later" }, events });
    expect(expectError(res, 400, "invalid_request").detail).toEqual({ param: "/destination/subject" });
    expectStatus(await alice.post("/v1/subscriptions", { destination: { type: "nats", broker: "nats", subject: `tenants.${aliceId}.x` }, events }), 201);
  });
});

test("an open broker (every key, every name) serves the single-tenant setup", async () => {
  await addOpenBroker(stack.registry.store, "open", "nats", "nats://127.0.0.1:4222");
  expectStatus(await carol.post("/v1/subscriptions", { destination: { type: "nats", broker: "open", subject: "anything.at.all" }, events }), 201);
});
