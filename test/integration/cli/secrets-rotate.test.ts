// APP_SECRET's keyring in operation (common/keyring.ts, cli/secrets.ts): deliveries keep flowing while the registry
// and the deliverer roll out a keyring with a new key and `bun run secrets rotate` re-seals every stored value under
// it; nothing fails to open, no delivery is lost, every stored value ends under the new key, and the command's
// counts add up. A concurrent rotation of a subscription's secret is never overwritten, and a sealed value copied
// onto another row is refused there.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { createClient, type Client } from "@connectrpc/connect";
import { loadConfig } from "../../../common/config.ts";
import { gcmSeal } from "../../../common/crypto.ts";
import { Keyring, rowBinding, UnreadableSecretError } from "../../../common/keyring.ts";
import { setLogSink } from "../../../common/logger.ts";
import { resealColumn } from "../../../common/reseal.ts";
import { inProcessTransport } from "../../../common/rpc.ts";
import { staticResolver } from "../../../common/ssrf.ts";
import { createDeliverer, type DelivererHandle } from "../../../deliverer/index.ts";
import { DeliveryService, NewEventSchema } from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { ApiKeyService, SubscriptionService } from "../../../gen/webhooks/registry/v1/registry_pb.ts";
import { createRegistry, type RegistryHandle } from "../../../registry/index.ts";
import { REGISTRY_SEALED_COLUMNS, brokerUrlBinding, subscriptionSecretBinding } from "../../../registry/sealed-columns.ts";
import { RegistryStore } from "../../../registry/db/store.ts";
import { sampleTransfer, startDeliveryBed, type DeliveryBed } from "../../support/delivery.ts";

const CLI = join(import.meta.dir, "..", "..", "..", "cli", "secrets.ts");
const OLD = randomBytes(32).toString("base64");
const NEW = randomBytes(32).toString("base64");
/** The keyring after the rollout: the new key first, the old (bare, hence "k0") still opening. */
const ROLLED = `k1:${NEW},k0:${OLD}`;

let bed: DeliveryBed;
const started: { registry?: RegistryHandle; deliverer?: DelivererHandle } = {};
const logLines: string[] = [];
let restoreSink: ((line: string) => void) | undefined;

beforeAll(async () => {
  restoreSink = setLogSink((line) => void logLines.push(line));
  bed = await startDeliveryBed({ env: { APP_SECRET: OLD } });
}, 60_000);

afterAll(async () => {
  await started.deliverer?.close();
  await started.registry?.close();
  await bed?.stop();
  if (restoreSink) setLogSink(restoreSink);
});

async function secretsCli(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string; rows: Map<string, number[]> }> {
  const proc = Bun.spawn([process.execPath, CLI, ...args], {
    env: { ...process.env, DATABASE_URL: bed.config.databaseUrl, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  const rows = new Map<string, number[]>();
  for (const line of stdout.split("\n").slice(1)) {
    const [kind, ...counts] = line.split("\t");
    if (kind && counts.length === 3) rows.set(kind, counts.map(Number));
  }
  return { code, stdout, stderr, rows };
}

/** Every non-null sealed value on the database, by "<table>.<column>". */
async function sealedValues(): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const [table, column] of [
    ["subscriptions", "secret"],
    ["subscriptions", "previous_secret"],
    ["brokers", "url"],
    ["idempotency_records", "response"],
    ["delivery_idempotency_records", "response"],
  ] as const) {
    const rows = (await bed.sql.unsafe(`select ${column} as v from ${table} where ${column} is not null`)) as { v: string }[];
    out.set(`${table}.${column}`, rows.map((r) => r.v));
  }
  return out;
}

const idem = (key: string, requestId: string) => ({ key, requestHash: "h", requestId });

/** The registry serving now: the rolled-out one once the first test started it. */
const registry = () => started.registry ?? bed.registry;

/** A key and a subscription to the receiver's `path`, through the registry serving now. */
async function subscribe(path: string): Promise<{ keyId: string; subscriptionId: string; secret: string }> {
  const transport = inProcessTransport(registry().routes);
  const key = await createClient(ApiKeyService, transport).createApiKey({ name: "test", chains: [] });
  const res = await createClient(SubscriptionService, transport).createSubscription({
    keyId: key.key!.id,
    destination: { type: "https", url: bed.receiver.url(path) },
    events: ["service.ping"],
    status: "",
    description: "",
  });
  const sub = res.subscription!;
  return { keyId: key.key!.id, subscriptionId: sub.id, secret: sub.destination!.secret };
}

test("rotate under traffic: the keyring gains a key, every value is re-sealed under it, no delivery fails or is lost", async () => {
  // Three subscriptions; the first one's secret as a value sealed before key ids would be (v1: no id, no row binding).
  const subs = [await bed.subscribe("/a"), await bed.subscribe("/b"), await bed.subscribe("/c")];
  const legacy = "v1." + gcmSeal(Keyring.parse(OLD).newest.encryptionKey, subs[0]!.secret);
  await bed.sql`update subscriptions set secret = ${legacy} where id = ${subs[0]!.subscriptionId}`;
  const paths = new Map(subs.map((s, i) => [s.subscriptionId, ["/a", "/b", "/c"][i]!]));
  // A broker URL, a stored idempotent response in the registry (a rotation under an Idempotency-Key, leaving a
  // previous secret too) and one in the deliverer (a test event).
  expect(await bed.registry.store.addBroker("rabbit", "amqp", "amqp://svc:hunter2@127.0.0.1:5672/")).toBe(true);
  const subClient = createClient(SubscriptionService, bed.registryTransport);
  const rotated = await subClient.rotateSecret({ keyId: subs[1]!.keyId, id: subs[1]!.subscriptionId, gracePeriodSeconds: 3600, secret: "", idempotency: idem("rot-1", "r1") });
  bed.receiver.setSecrets("/b", [rotated.subscription!.destination!.secret, subs[1]!.secret]);
  await bed.delivery.createTestEvent({ keyId: subs[2]!.keyId, subscriptionId: subs[2]!.subscriptionId, kind: "", idempotency: idem("test-1", "r2") });

  // Traffic: one event every few ms, round robin, through whichever deliverer is current.
  let delivery: Client<typeof DeliveryService> = bed.delivery;
  const sent = new Map<string, string>(); // event id → path
  let n = 0;
  let flowing = true;
  const traffic = (async () => {
    while (flowing) {
      const sub = subs[n % subs.length]!;
      const res = await delivery.enqueue({
        events: [create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind: "wallet.transfer.broadcasted", transfer: sampleTransfer(n++) })],
      });
      for (const id of res.eventIds) sent.set(id, paths.get(sub.subscriptionId)!);
      await Bun.sleep(10);
    }
  })();
  const deliveredAtLeast = async (count: number) => bed.receiver.waitFor((all) => all.length >= count, 30_000);
  await deliveredAtLeast(20);

  // Rollout: a registry and a deliverer with the new keyring take over; the old ones stop.
  const rolled = loadConfig({ ...bed.env, APP_SECRET: ROLLED });
  started.registry = await createRegistry(rolled, { resolver: staticResolver({}) });
  started.deliverer = await createDeliverer(rolled, { registry: inProcessTransport(started.registry.routes) });
  delivery = createClient(DeliveryService, inProcessTransport(started.deliverer.routes));
  await bed.deliverer!.close();
  await bed.registry.close();
  await deliveredAtLeast(bed.receiver.count() + 20);

  // The rotation, under traffic and beside a user rotating a secret (with its grace period) meanwhile.
  const user = createClient(SubscriptionService, inProcessTransport(started.registry.routes));
  const rotation = secretsCli({ APP_SECRET: ROLLED }, "rotate", "--batch", "2");
  const again = await user.rotateSecret({ keyId: subs[2]!.keyId, id: subs[2]!.subscriptionId, gracePeriodSeconds: 3600, secret: "" });
  bed.receiver.setSecrets("/c", [again.subscription!.destination!.secret, subs[2]!.secret]);
  const first = await rotation;
  expect(first.stderr).toBe("");
  expect(first.code).toBe(0);
  await deliveredAtLeast(bed.receiver.count() + 20);
  flowing = false;
  await traffic;

  // No delivery lost, every one signed with a secret the receiver knows.
  await bed.receiver.waitFor((all) => [...sent.keys()].every((id) => all.some((d) => d.headers["webhook-id"] === id)), 30_000);
  for (const d of bed.receiver.deliveries()) expect(d.verified, `${d.path} ${d.headers["webhook-id"]}`).toBe(true);
  expect(sent.size).toBeGreaterThan(60);
  // Nothing failed to open anywhere.
  expect(logLines.filter((l) => /Unreadable|does not open|opens under no key/.test(l))).toEqual([]);

  // Every stored value is under the new key, and the counts say how they got there.
  const values = await sealedValues();
  for (const [kind, list] of values) for (const v of list) expect(v.slice(0, 6), kind).toBe("v2.k1.");
  expect(values.get("subscriptions.secret")).toHaveLength(3);
  expect(values.get("subscriptions.previous_secret")).toHaveLength(2);
  const counted = (kind: string) => first.rows.get(kind)!;
  // Every value was re-sealed by the run or written under k1 by the new registry meanwhile; none unreadable.
  for (const [kind, list] of values) {
    const [rotatedN, current, unreadable] = counted(kind);
    expect(unreadable, kind).toBe(0);
    expect(rotatedN! + current!, kind).toBeGreaterThanOrEqual(kind === "subscriptions.previous_secret" ? 1 : list.length);
  }
  expect(counted("subscriptions.secret")[0]).toBeGreaterThanOrEqual(2); // /a (v1) and /b at least
  expect(counted("brokers.url")).toEqual([1, 0, 0]);
  expect(counted("delivery_idempotency_records.response")).toEqual([1, 0, 0]);
  expect(first.stdout).toContain("Key k1:");

  // Idempotent: a second run finds everything current.
  const second = await secretsCli({ APP_SECRET: ROLLED }, "rotate");
  expect(second.code).toBe(0);
  for (const [kind, list] of values) expect(second.rows.get(kind), kind).toEqual([0, list.length, 0]);
  // And the old key can go: status shows nothing under k0, and the values open under k1 alone.
  const status = await secretsCli({ APP_SECRET: ROLLED }, "status");
  expect(status.stdout).not.toContain("\tk0\t");
  expect(status.stdout).toContain("subscriptions.secret\tk1\t3");
  const onlyNew = new RegistryStore(started.registry.store.db, { keyring: Keyring.parse(`k1:${NEW}`) });
  const [row] = (await bed.sql`select secret from subscriptions where id = ${subs[0]!.subscriptionId}`) as { secret: string }[];
  expect(onlyNew.open(row!.secret, subscriptionSecretBinding(subs[0]!.subscriptionId))).toBe(subs[0]!.secret);
  const replay = await user.rotateSecret({ keyId: subs[1]!.keyId, id: subs[1]!.subscriptionId, gracePeriodSeconds: 3600, secret: "", idempotency: idem("rot-1", "r3") });
  expect(replay.subscription!.destination!.secret).toBe(rotated.subscription!.destination!.secret);
}, 120_000);

test("a user's rotation between the re-seal's read and its write is kept, re-sealed from what it wrote", async () => {
  const sub = await subscribe("/race");
  // A service still on the old keyring rotates the secret while the re-seal holds the row it read.
  const oldStore = new RegistryStore(registry().store.db, { keyring: Keyring.parse(OLD) });
  await oldStore.write((tx) => oldStore.rotateSecret(tx, sub.keyId, sub.subscriptionId, sub.secret, 0)); // under k0 again
  const rolled = Keyring.parse(ROLLED);
  const userSecret = "whsec_" + randomBytes(32).toString("base64");
  const secretColumn = REGISTRY_SEALED_COLUMNS.find((c) => c.table === "subscriptions" && c.column === "secret")!;
  let raced = false;
  const counts = await resealColumn(registry().store.db, rolled, secretColumn, {
    beforeWrite: async ([id]) => {
      if (id !== sub.subscriptionId || raced) return;
      raced = true;
      await oldStore.write((tx) => oldStore.rotateSecret(tx, sub.keyId, sub.subscriptionId, userSecret, 0));
    },
  });
  expect(raced).toBe(true);
  expect(counts.unreadable).toBe(0);
  const [row] = (await bed.sql`select secret from subscriptions where id = ${sub.subscriptionId}`) as { secret: string }[];
  expect(row!.secret).toStartWith("v2.k1.");
  expect(rolled.open(row!.secret, subscriptionSecretBinding(sub.subscriptionId))).toBe(userSecret);
}, 60_000);

test("a sealed value copied onto another row is refused there: secrets, broker URLs, stored responses", async () => {
  const store = registry().store;
  const a = await subscribe("/swap-a");
  const b = await subscribe("/swap-b");
  await bed.sql`update subscriptions set secret = (select secret from subscriptions where id = ${a.subscriptionId}) where id = ${b.subscriptionId}`;
  const [rowB] = (await bed.sql`select secret from subscriptions where id = ${b.subscriptionId}`) as { secret: string }[];
  expect(() => store.open(rowB!.secret, subscriptionSecretBinding(b.subscriptionId))).toThrow(UnreadableSecretError);
  expect(store.open(rowB!.secret, subscriptionSecretBinding(a.subscriptionId))).toBe(a.secret);

  expect(await store.addBroker("one", "amqp", "amqp://u:p@127.0.0.1:5672/")).toBe(true);
  expect(await store.addBroker("other", "amqp", "amqp://v:q@127.0.0.1:5672/")).toBe(true);
  await bed.sql`update brokers set url = (select url from brokers where name = 'one') where name = 'other'`;
  const other = (await store.getBroker("other"))!;
  expect(() => store.open(other.url, brokerUrlBinding("other"))).toThrow(UnreadableSecretError);
  expect(store.open(other.url, brokerUrlBinding("one"))).toBe("amqp://u:p@127.0.0.1:5672/");

  // The registry's stored response of one Idempotency-Key copied under another: the replay is refused, not served.
  const user = createClient(SubscriptionService, inProcessTransport(registry().routes));
  await user.rotateSecret({ keyId: a.keyId, id: a.subscriptionId, gracePeriodSeconds: 0, secret: "", idempotency: idem("swap-1", "s1") });
  await user.rotateSecret({ keyId: a.keyId, id: a.subscriptionId, gracePeriodSeconds: 0, secret: "", idempotency: idem("swap-2", "s2") });
  await bed.sql`update idempotency_records set response = (select response from idempotency_records where idem_key = 'swap-1') where idem_key = 'swap-2'`;
  const refused = await user.rotateSecret({ keyId: a.keyId, id: a.subscriptionId, gracePeriodSeconds: 0, secret: "", idempotency: idem("swap-2", "s3") }).then(
    () => "served",
    () => "refused",
  );
  expect(refused).toBe("refused");
  expect(rowBinding("idempotency_records.response", "x")).not.toBe(rowBinding("delivery_idempotency_records.response", "x"));
}, 60_000);
