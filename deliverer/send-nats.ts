// One attempt to a NATS JetStream subject through @nats-io/transport-node and @nats-io/jetstream: a JetStream publish
// with `Nats-Msg-Id` = the event id (the stream's duplicate window drops a retried publish whose ack was lost) and
// the Standard Webhooks headers. The attempt succeeds only on the stream's ack: no stream capturing the subject
// ("no stream"), no ack in time ("timeout"), or an error from the stream is a failed attempt.
//
// One connection per broker (name and URL), made on first use; the client reconnects by itself while it lives, and
// a connection that closes for good is dropped so the next attempt makes a new one.
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { connect, headers as natsHeaders, type MsgHdrs, type NatsConnection } from "@nats-io/transport-node";
import { QUEUE_MESSAGE_HEADERS, queueFailure as fail, type AttemptRequest, type QueueOutcome as Outcome, type QueueTarget } from "./send.ts";

/** A message's NATS headers: its content type and the Standard Webhooks headers among `headers`. */
export function natsMessageHeaders(headers: Record<string, string>): MsgHdrs {
  // append, not set, on a new header set: set first deletes the name, a search of every key, for each header.
  const h = natsHeaders();
  h.append("content-type", "application/json");
  for (const name of QUEUE_MESSAGE_HEADERS) {
    const v = headers[name];
    if (v !== undefined) h.append(name, v);
  }
  return h;
}

interface Link {
  nc: Promise<NatsConnection>;
  js: Promise<JetStreamClient>;
  /** The client once connected: attempts publish without waiting on the promise (one microtask turn less each). */
  ready?: JetStreamClient;
}

/**
 * The client's connection options for a broker: nats://user:pass@host:port or nats://TOKEN@host:port → the server
 * address and the credentials as the client takes them. Also what `bench delivery-queues` connects its floor with.
 */
export function connectOptions(brokerUrl: string, timeoutMs: number) {
  const url = new URL(brokerUrl);
  const port = url.port || "4222";
  const user = decodeURIComponent(url.username);
  // A user name without a password is a token, as NATS URLs write one (and as `brokers list` masks it).
  const credentials = !user ? {} : url.password ? { user, pass: decodeURIComponent(url.password) } : { token: user };
  return {
    servers: `${url.hostname}:${port}`,
    ...credentials,
    ...(url.protocol === "tls:" ? { tls: {} } : {}),
    timeout: timeoutMs,
    reconnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    // Async traces build an Error (a stack capture) for every request, i.e. every publish, to decorate a failure
    // with where the request started; an attempt reports only a short reason (natsReason), so they are pure cost.
    noAsyncTraces: true,
    name: "tron-webhooks-deliverer",
  };
}

export function natsReason(err: unknown): { body: string; failure: string } {
  const e = err as { name?: string; message?: string; code?: string; cause?: unknown };
  const text = `${e?.name ?? ""} ${e?.code ?? ""} ${e?.message ?? String(err)}`;
  // JetStream answers a subject no stream captures with "no responders", which the client reports as JetStream
  // not being enabled.
  if (/JetStreamNotEnabled|no responders|NoResponders|503/i.test(text)) return { body: "no stream", failure: "broker" };
  if (/Timeout/i.test(text)) return { body: "timeout", failure: "timeout" };
  if (/ECONNREFUSED|CONNECTION_REFUSED/i.test(text)) return { body: "connection refused", failure: "connect" };
  if (/closed|CONNECTION_CLOSED|ClosedConnection/i.test(text)) return { body: "connection closed", failure: "connect" };
  if (/Authorization|AUTHORIZATION|auth/i.test(text)) return { body: "the broker refused the credentials", failure: "connect" };
  return { body: (e?.message ?? String(err)).slice(0, 300), failure: "broker" };
}

export class NatsSender {
  private readonly links = new Map<string, Link>();

  constructor(private readonly timeoutMs: number) {}

  private link(q: QueueTarget): Link {
    const key = `${q.broker}|${q.brokerUrl}`;
    const existing = this.links.get(key);
    if (existing) return existing;
    const nc = connect(connectOptions(q.brokerUrl, this.timeoutMs));
    const link: Link = { nc, js: nc.then((c) => (link.ready = jetstream(c, { timeout: this.timeoutMs }))) };
    const drop = () => {
      if (this.links.get(key) === link) this.links.delete(key);
    };
    nc.then((c) => c.closed().then(drop), drop);
    this.links.set(key, link);
    return link;
  }

  async send(req: AttemptRequest, q: QueueTarget, signal: AbortSignal): Promise<Outcome> {
    const link = this.link(q);
    let js = link.ready;
    if (!js) {
      try {
        js = await link.js;
      } catch (err) {
        const r = natsReason(err);
        return fail(r.body, r.failure === "broker" ? "connect" : r.failure);
      }
    }
    const h = natsMessageHeaders(req.headers);
    if (signal.aborted) return fail("attempt aborted by shutdown", "aborted");
    try {
      await js.publish(q.subject, req.body, { msgID: req.headers["webhook-id"] ?? "", headers: h, timeout: this.timeoutMs });
      return { ok: true, status: null, body: "acked", retryAfterMs: null, failure: null };
    } catch (err) {
      if (signal.aborted) return fail("attempt aborted by shutdown", "aborted");
      const r = natsReason(err);
      return fail(r.body, r.failure);
    }
  }

  async close(): Promise<void> {
    const links = [...this.links.values()];
    this.links.clear();
    await Promise.all(links.map(async (l) => (await l.nc.catch(() => undefined))?.close().catch(() => {})));
  }
}
