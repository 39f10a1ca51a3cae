// The Sender the worker uses: one interface, the implementation chosen per event by its destination's type
// (HTTPS: send.ts, AMQP: send-amqp.ts, NATS JetStream: send-nats.ts). Queue senders answer with `status` null and
// the broker's short answer in `body` ("acked", "returned: NO_ROUTE", "no stream", "timeout", …).
import type { DeliveryTarget } from "../gen/webhooks/registry/v1/registry_pb.ts";
import { AmqpSender } from "./send-amqp.ts";
import { NatsSender } from "./send-nats.ts";
import { createSender, queueFailure, type AttemptOutcome, type QueueTarget, type Sender, type SenderOptions } from "./send.ts";

export interface RoutingSender extends Sender {
  /** Closes the pooled broker connections. */
  close(): Promise<void>;
}

/** The queue part of a target, or undefined for https. */
export function queueTarget(target: DeliveryTarget): QueueTarget | undefined {
  const d = target.destination;
  if (!d || (d.type !== "amqp" && d.type !== "nats")) return undefined;
  return { type: d.type, broker: d.broker, brokerUrl: target.brokerUrl, exchange: d.exchange, routingKey: d.routingKey, subject: d.subject };
}

/**
 * The unit of per-destination fairness (the worker's per-destination slots and waiting queues): the host for https,
 * the broker and exchange for AMQP, the broker and subject for NATS.
 */
export function destinationKey(target: DeliveryTarget): string {
  const q = queueTarget(target);
  if (q?.type === "amqp") return `amqp:${q.broker}/${q.exchange}`;
  if (q?.type === "nats") return `nats:${q.broker}/${q.subject}`;
  try {
    return new URL(target.url).host.toLowerCase();
  } catch {
    return "";
  }
}

export function createRoutingSender(opts: SenderOptions): RoutingSender {
  const https = createSender(opts);
  const amqp = new AmqpSender(opts.timeoutMs);
  const nats = new NatsSender(opts.timeoutMs);
  const never = new AbortController().signal;
  return {
    async send(req, signal = never): Promise<AttemptOutcome> {
      const q = req.queue;
      if (!q) return https.send(req, signal);
      const started = performance.now();
      if (q.brokerUrl === "") return { ...queueFailure(`broker ${q.broker} is not registered`), durationMs: 0 };
      const out = q.type === "amqp" ? await amqp.send(req, q, signal) : await nats.send(req, q, signal);
      return { ...out, durationMs: performance.now() - started };
    },
    async close() {
      await Promise.all([amqp.close(), nats.close()]);
    },
  };
}
