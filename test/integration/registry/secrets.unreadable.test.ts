// One subscription's stored signing secret cannot be decrypted (a damaged row, or a row sealed under another
// APP_SECRET): its events are kept and held with a reason, every other subscription's transfers in the same blocks
// are delivered, and the held events go out once a rotation makes the secret readable again. The whole stack is
// real: the simulator is the node, the matcher reads it, the deliverer sends to a verifying HTTPS receiver.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { startTronSim, type TronSim } from "../../../tools/tron-sim/server.ts";
import { call, startEventsStack, type EventsStack } from "../../support/events.ts";
import type { TestKey } from "../../support/stack.ts";
import { until } from "../../support/wait.ts";

const CHAIN = "tron:mainnet";
let sim: TronSim;
let env: EventsStack;
let sql: SQL;
let key: TestKey;

interface Ev {
  id: string;
  status: string;
  heldReason: string | null;
  attempts: number;
  payload: { data: { to: string; txId: string } };
}

beforeAll(async () => {
  // No generated traffic: the blocks hold only the transfers the test queues.
  sim = startTronSim({ blockMs: 0, txPerBlock: 0, poolSize: 10, seed: 29, recorded: false, startNumber: 61_000_000 });
  env = await startEventsStack({
    env: { MATCHER_CHAINS: CHAIN, MATCHER_POLL_MS: "50" },
    matcher: { nodeUrls: { [CHAIN]: sim.url }, stream: { leaseRetryMs: 100, solidified: false } },
  });
  sql = new SQL(env.stack.database.url, { max: 1 });
  key = await env.stack.createKey({ chains: [CHAIN] });
});
afterAll(async () => {
  await sql?.close();
  await env?.stop();
  await sim?.stop();
});

async function subscribe(path: string, address: string): Promise<string> {
  const base = env.stack.baseUrl;
  const res = await call<{ id: string; destination: { secret: string } }>(base, key.key, "POST", "/v1/subscriptions", {
    destination: { type: "https", url: env.receiver.url(path) },
    events: ["wallet.transfer.broadcasted"],
  });
  expect(res.status).toBe(201);
  env.receiver.setSecrets(path, [res.body.destination.secret]);
  const patch = await call(base, key.key, "PATCH", `/v1/subscriptions/${res.body.id}/filters/addresses`, { add: [{ chainId: CHAIN, address }] });
  expect(patch.status).toBe(200);
  return res.body.id;
}

/** Changes one character of the subscription's sealed secret: AES-GCM's tag no longer verifies. */
async function damageSecret(subscriptionId: string): Promise<void> {
  const [row] = (await sql`SELECT secret FROM subscriptions WHERE id = ${subscriptionId}`) as { secret: string }[];
  const sealed = row!.secret;
  const damaged = sealed.slice(0, -2) + (sealed.at(-2) === "A" ? "B" : "A") + sealed.at(-1);
  await sql`UPDATE subscriptions SET secret = ${damaged} WHERE id = ${subscriptionId}`;
}

async function heldMetric(): Promise<number> {
  const text = await (await fetch(`${env.stack.baseUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith('deliverer_events_held_total{reason="secret_unreadable"}'));
  return line ? Number(line.split(" ").pop()) : 0;
}

test("an undecryptable secret holds its subscription's events (with a reason); the others in the same blocks are delivered; a rotation resumes them", async () => {
  const base = env.stack.baseUrl;
  const [payer, good, bad] = sim.poolAddresses(3) as [string, string, string];
  const goodId = await subscribe("/good", good);
  const badId = await subscribe("/bad", bad);

  await damageSecret(badId);
  const before = await heldMetric();

  // Two blocks, each paying both subscriptions' addresses.
  for (let i = 0; i < 2; i++) {
    sim.chain.enqueue([
      { type: "trx", from: payer, to: good, amount: 1_000 + i },
      { type: "trx", from: payer, to: bad, amount: 2_000 + i },
    ]);
    sim.produce(1);
  }

  // The healthy subscription gets both of its transfers, verified against its secret.
  await until("the healthy subscription's deliveries", async () => env.receiver.deliveries("/good").length >= 2, 20_000);
  expect(env.receiver.deliveries("/good").every((d) => d.verified)).toBe(true);

  // The damaged one's events exist, pending and held with the reason, and nothing was sent for them.
  const list = async () => (await call<{ items: Ev[] }>(base, key.key, "GET", `/v1/subscriptions/${badId}/events`)).body.items;
  await until("the held subscription's events", async () => (await list()).length === 2, 10_000);
  for (const e of await list()) {
    expect(e.payload.data.to).toBe(bad);
    const one = await call<Ev>(base, key.key, "GET", `/v1/subscriptions/${badId}/events/${e.id}`);
    expect(one.body).toMatchObject({ status: "pending", heldReason: "secret_unreadable", attempts: 0 });
  }
  const search = await call<{ items: Ev[] }>(base, key.key, "GET", `/v1/events?subscriptionId=${badId}`);
  expect(search.body.items.map((e) => e.heldReason)).toEqual(["secret_unreadable", "secret_unreadable"]);
  const goodEvents = (await call<{ items: Ev[] }>(base, key.key, "GET", `/v1/subscriptions/${goodId}/events`)).body.items;
  expect(goodEvents.map((e) => [e.status, e.heldReason])).toEqual([["delivered", null], ["delivered", null]]);
  expect(env.receiver.deliveries("/bad")).toHaveLength(0);
  expect((await heldMetric()) - before).toBeGreaterThanOrEqual(2);

  // A rotation (with the default grace period: the unreadable secret is not kept as the previous one) makes the
  // target readable again, and the held events go out signed with the new secret.
  const rotated = await call<{ destination: { secret: string } }>(base, key.key, "POST", `/v1/subscriptions/${badId}/secrets/rotate`);
  expect(rotated.status).toBe(200);
  env.receiver.setSecrets("/bad", [rotated.body.destination.secret]);
  await until("the held events after the rotation", async () => env.receiver.deliveries("/bad").length >= 2, 20_000);
  const sent = env.receiver.deliveries("/bad");
  expect(sent.every((d) => d.verified)).toBe(true);
  expect(sent[0]!.headers["webhook-signature"]!.split(" ")).toHaveLength(1);
  await until("the held events delivered", async () => (await list()).every((e) => e.status === "delivered" && e.heldReason === null), 10_000);
}, 60_000);

test("a secret that stops decrypting while an event is retrying: the next attempt holds it instead of sending; a rotation sends it", async () => {
  const base = env.stack.baseUrl;
  const [, , , address] = sim.poolAddresses(4) as [string, string, string, string];
  const id = await subscribe("/retrying", address);
  // The first attempt hangs until the delivery timeout; the secret is damaged meanwhile, so the retry reads it.
  env.receiver.setBehaviour("/retrying", { kind: "sequence", steps: [{ kind: "hang" }, { kind: "ok" }] });
  const created = await call<Ev>(base, key.key, "POST", `/v1/subscriptions/${id}/test`);
  expect(created.status).toBe(200);
  await until("the first attempt", async () => env.receiver.deliveries("/retrying").length === 1, 10_000);
  await damageSecret(id);
  const view = async () => (await call<Ev>(base, key.key, "GET", `/v1/subscriptions/${id}/events/${created.body.id}`)).body;
  const held = await until("the event held", async () => ((await view()).heldReason === "secret_unreadable" ? view() : undefined), 15_000);
  expect(held).toMatchObject({ status: "pending", attempts: 1 });
  expect(env.receiver.deliveries("/retrying")).toHaveLength(1);

  const rotated = await call<{ destination: { secret: string } }>(base, key.key, "POST", `/v1/subscriptions/${id}/secrets/rotate`, { gracePeriodSeconds: 0 });
  env.receiver.setSecrets("/retrying", [rotated.body.destination.secret]);
  await until("the held event delivered", async () => (await view()).status === "delivered", 15_000);
  const sent = env.receiver.deliveries("/retrying");
  expect(sent).toHaveLength(2);
  expect(sent[1]!.verified).toBe(true);
  expect((await view()).heldReason).toBeNull();
}, 60_000);

test("the reason of held events follows the target: disabled, then enabled with an unreadable secret", async () => {
  const base = env.stack.baseUrl;
  const [, , , , address] = sim.poolAddresses(5) as [string, string, string, string, string];
  const id = await subscribe("/reason", address);
  const put = (status: string) =>
    call(base, key.key, "PUT", `/v1/subscriptions/${id}`, { destination: { type: "https", url: env.receiver.url("/reason") }, events: ["wallet.transfer.broadcasted"], status });
  env.receiver.setBehaviour("/reason", { kind: "sequence", steps: [{ kind: "hang" }, { kind: "ok" }] });
  const created = await call<Ev>(base, key.key, "POST", `/v1/subscriptions/${id}/test`);
  await until("the first attempt", async () => env.receiver.deliveries("/reason").length === 1, 10_000);
  expect((await put("disabled")).status).toBe(200);
  const view = async () => (await call<Ev>(base, key.key, "GET", `/v1/subscriptions/${id}/events/${created.body.id}`)).body;
  await until("held while disabled", async () => (await view()).heldReason === "subscription_disabled", 15_000);

  // Enabled again, but its secret no longer decrypts: still held, now for that.
  await damageSecret(id);
  expect((await put("enabled")).status).toBe(200);
  await until("held for the secret", async () => (await view()).heldReason === "secret_unreadable", 15_000);
  expect(env.receiver.deliveries("/reason")).toHaveLength(1);
}, 60_000);
