// The demo's NATS part: when NATS JetStream answers on 127.0.0.1:4222, register it as a broker, make a stream for
// a demo subject, subscribe the same addresses to it, and read the messages back, verifying each with the
// client's WebhookVerifier (clients/typescript) and the subscription's secret, as a consumer would.
import { randomBytes } from "node:crypto";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { WebhookVerifier, type WalletTransferBroadcasted } from "../clients/typescript/src/webhooks.ts";
import type { RegistryStore } from "../registry/db/store.ts";

export const DEMO_NATS_URL = "nats://127.0.0.1:4222";

export interface NatsMessage {
  /** The payload's transfer: txId and logIndex. */
  transfer: string;
  eventId: string;
  verified: boolean;
}

export interface DemoNats {
  broker: string;
  subject: string;
  /** Messages read so far, in stream order. */
  messages: NatsMessage[];
  /** Starts reading; verifies with `secret`. */
  read(secret: string): Promise<void>;
  close(): Promise<void>;
}

/** undefined when NATS (with JetStream) does not answer on 127.0.0.1:4222. */
export async function startDemoNats(store: RegistryStore): Promise<DemoNats | undefined> {
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  try {
    nc = await connect({ servers: "127.0.0.1:4222", timeout: 1_000, maxReconnectAttempts: 0 });
    jsm = await jetstreamManager(nc);
  } catch {
    return undefined;
  }
  const tag = randomBytes(4).toString("hex");
  const stream = `DEMO_${tag}`;
  const subject = `demo.${tag}.transfers`;
  const broker = `demo-nats-${tag}`;
  await jsm.streams.add({ name: stream, subjects: [subject] });
  await store.addBroker(broker, "nats", DEMO_NATS_URL);
  // The demo's one key may name its subject, as `bun run brokers grant` allows.
  await store.grantBroker({ broker, keyId: "*", prefix: subject, defaultExchange: false });
  const messages: NatsMessage[] = [];
  let stopReading: (() => void) | undefined;
  return {
    broker,
    subject,
    messages,
    async read(secret) {
      const consumer = await jetstream(nc).consumers.get(stream);
      const iter = await consumer.consume();
      stopReading = () => void iter.stop();
      const verifier = new WebhookVerifier(secret);
      void (async () => {
        for await (const m of iter) {
          const h = m.headers;
          const headers = { "webhook-id": h?.get("webhook-id") ?? "", "webhook-timestamp": h?.get("webhook-timestamp") ?? "", "webhook-signature": h?.get("webhook-signature") ?? "" };
          const verified = verifier.verifies(m.string(), headers);
          const p = JSON.parse(m.string()) as WalletTransferBroadcasted;
          messages.push({ transfer: `${p.data.txId}:${p.data.logIndex}`, eventId: p.id, verified });
        }
      })();
    },
    async close() {
      stopReading?.();
      await jsm.streams.delete(stream).catch(() => {});
      await nc.close().catch(() => {});
    },
  };
}
