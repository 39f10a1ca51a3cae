// The real brokers for queue-destination tests: RabbitMQ on 127.0.0.1:5672 (guest/guest) and NATS JetStream on
// 127.0.0.1:4222, or a private nats-server a test can kill and restart. Every test declares its own exchange, queue
// and stream under random names and deletes them afterwards.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import amqp, { type Channel, type ChannelModel } from "amqplib";
import { jetstream, jetstreamManager, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { DeliveryBed } from "./delivery.ts";
import { freePorts } from "./ports.ts";
import { until } from "./wait.ts";

export const RABBIT_URL = "amqp://guest:guest@127.0.0.1:5672/";
export const NATS_URL = "nats://127.0.0.1:4222";

export function randomName(prefix: string): string {
  return `${prefix}-${randomBytes(6).toString("hex")}`;
}

/** What `addOpenBroker` needs of a registry store. */
interface BrokerStore {
  addBroker(name: string, type: string, url: string): Promise<boolean>;
  grantBroker(grant: { broker: string; keyId: string; prefix: string; defaultExchange: boolean }): Promise<boolean>;
}

/**
 * Registers a broker every key may name anything on (as `bun run brokers add` then `brokers grant NAME '*' --prefix ""
 * --default-exchange` do): the queue tests are about delivery, the namespaces have tests of their own.
 */
export async function addOpenBroker(store: BrokerStore, name: string, type: "amqp" | "nats", url: string): Promise<void> {
  if (!(await store.addBroker(name, type, url))) throw new Error(`broker ${name} exists`);
  await store.grantBroker({ broker: name, keyId: "*", prefix: "", defaultExchange: true });
}

/** Registers an open broker straight in the bed's registry. */
export async function addBroker(bed: DeliveryBed, name: string, type: "amqp" | "nats", url: string): Promise<void> {
  await addOpenBroker(bed.registry.store, name, type, url);
}

/** A key and an enabled subscription with the given destination; returns its ids and signing secret. */
export async function subscribeTo(
  bed: DeliveryBed,
  destination: { type: string; broker?: string; exchange?: string; routingKey?: string; subject?: string; url?: string },
): Promise<{ keyId: string; subscriptionId: string; secret: string }> {
  const key = await bed.keys.createApiKey({ name: "queues", chains: [] });
  const res = await bed.subscriptions.createSubscription({
    keyId: key.key!.id,
    destination: { url: "", broker: "", exchange: "", routingKey: "", subject: "", ...destination },
    events: ["wallet.transfer.broadcasted", "service.ping"],
    status: "",
    description: "",
  });
  const sub = res.subscription!;
  return { keyId: key.key!.id, subscriptionId: sub.id, secret: sub.destination!.secret };
}

/** A RabbitMQ exchange (direct) with one queue bound by `routingKey`; `close` deletes both. */
export interface RabbitRoute {
  exchange: string;
  queue: string;
  routingKey: string;
  channel: Channel;
  /** Messages read so far, in order (the queue is consumed with manual acks). */
  received: { body: string; messageId: string; headers: Record<string, unknown>; contentType: string; persistent: boolean }[];
  close(): Promise<void>;
}

export async function rabbitRoute(opts: { consume?: boolean } = {}): Promise<RabbitRoute> {
  const conn: ChannelModel = await amqp.connect(RABBIT_URL);
  const channel = await conn.createChannel();
  const exchange = randomName("ex");
  const queue = randomName("q");
  const routingKey = randomName("rk");
  await channel.assertExchange(exchange, "direct", { durable: false, autoDelete: false });
  await channel.assertQueue(queue, { durable: false });
  await channel.bindQueue(queue, exchange, routingKey);
  const received: RabbitRoute["received"] = [];
  if (opts.consume !== false) {
    await channel.consume(queue, (msg) => {
      if (!msg) return;
      received.push({
        body: msg.content.toString(),
        messageId: String(msg.properties.messageId),
        headers: msg.properties.headers ?? {},
        contentType: String(msg.properties.contentType),
        persistent: msg.properties.deliveryMode === 2,
      });
      channel.ack(msg);
    });
  }
  return {
    exchange,
    queue,
    routingKey,
    channel,
    received,
    async close() {
      await channel.deleteQueue(queue).catch(() => {});
      await channel.deleteExchange(exchange).catch(() => {});
      await conn.close().catch(() => {});
    },
  };
}

/** A JetStream stream capturing `subject` (and a reader of it); `close` deletes the stream. */
export interface NatsStream {
  stream: string;
  subject: string;
  nc: NatsConnection;
  jsm: JetStreamManager;
  /** Every message in the stream, in order (read through an ordered consumer). */
  messages(): Promise<JsMsg[]>;
  close(): Promise<void>;
}

export async function natsStream(url = NATS_URL, opts: { duplicateWindowMs?: number } = {}): Promise<NatsStream> {
  const u = new URL(url);
  const nc = await connect({ servers: u.host, ...(u.username ? { token: decodeURIComponent(u.username) } : {}) });
  const jsm = await jetstreamManager(nc);
  const stream = randomName("st").replace(/-/g, "_");
  const subject = `${stream}.events`;
  await jsm.streams.add({
    name: stream,
    subjects: [subject],
    ...(opts.duplicateWindowMs ? { duplicate_window: opts.duplicateWindowMs * 1_000_000 } : {}),
  });
  return {
    stream,
    subject,
    nc,
    jsm,
    async messages() {
      const info = await jsm.streams.info(stream);
      const n = info.state.messages;
      if (n === 0) return [];
      const consumer = await jetstream(nc).consumers.get(stream);
      const out: JsMsg[] = [];
      const iter = await consumer.fetch({ max_messages: n, expires: 2_000 });
      for await (const m of iter) {
        out.push(m);
        if (out.length >= n) break;
      }
      return out;
    },
    async close() {
      await jsm.streams.delete(stream).catch(() => {});
      await nc.close().catch(() => {});
    },
  };
}

/** A private nats-server with JetStream on a free port: a test can kill and restart it without touching the shared one. */
export interface PrivateNats {
  url: string;
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

/** `token`: the server requires it (`--auth`), and `url` carries it as NATS URLs do (nats://TOKEN@host:port). */
export async function startPrivateNats(opts: { token?: string } = {}): Promise<PrivateNats> {
  const [port] = freePorts(1);
  const dir = mkdtempSync(join(tmpdir(), "nats-"));
  let proc: ReturnType<typeof Bun.spawn> | undefined;
  const url = opts.token ? `nats://${opts.token}@127.0.0.1:${port}` : `nats://127.0.0.1:${port}`;
  const auth = opts.token ? ["--auth", opts.token] : [];
  const up = async () => {
    proc = Bun.spawn(["/usr/sbin/nats-server", "-js", "-a", "127.0.0.1", "-p", String(port), "-sd", dir, ...auth], { stdout: "ignore", stderr: "ignore" });
    await until(`nats-server on ${port}`, async () => {
      try {
        const nc = await connect({ servers: `127.0.0.1:${port}`, timeout: 500, ...(opts.token ? { token: opts.token } : {}) });
        await nc.close();
        return true;
      } catch {
        return false;
      }
    }, 15_000, 100);
  };
  await up();
  return {
    url,
    port: port!,
    async stop() {
      proc?.kill("SIGKILL");
      await proc?.exited;
      proc = undefined;
    },
    start: up,
    async close() {
      proc?.kill("SIGKILL");
      await proc?.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
