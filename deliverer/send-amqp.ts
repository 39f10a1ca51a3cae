// One attempt to an AMQP 0-9-1 broker (RabbitMQ) through amqplib: published persistent and `mandatory` on a confirm
// channel, `message_id` = the event id, `content_type` application/json, the Standard Webhooks headers as message
// headers. The attempt succeeds only on the broker's ack of a routed message: a return (mandatory, no queue bound),
// a nack, a closed channel or connection, or no confirm within the attempt's time is a failed attempt.
//
// One connection per broker (name and URL), made on first use and dropped when it closes, so the next attempt
// reconnects; one confirm channel per exchange on it, because RabbitMQ closes a channel that publishes to a missing
// exchange, and that must fail only the attempts to that exchange.
import amqp, { type ChannelModel, type ConfirmChannel, type Message, type Options } from "amqplib";
import { QUEUE_MESSAGE_HEADERS, queueFailure as fail, type AttemptRequest, type QueueOutcome as Outcome, type QueueTarget } from "./send.ts";

interface Link {
  conn: Promise<ChannelModel>;
  channels: Map<string, Promise<Lane>>;
  /** The channels that are open, by exchange: attempts publish on them without waiting on a promise. */
  ready: Map<string, Lane>;
}

/** A confirm channel and the returns it has seen, by message id, until their confirms arrive. */
interface Lane {
  channel: ConfirmChannel;
  returned: Map<string, string>;
  closed: string | undefined;
}

/**
 * A message's AMQP properties: persistent, `mandatory` (an unroutable message comes back), `message_id` = the event
 * id, the content type, the Standard Webhooks headers among `headers` as message headers.
 */
export function amqpMessageOptions(headers: Record<string, string>): Options.Publish & { messageId: string } {
  const table: Record<string, string> = {};
  for (const name of QUEUE_MESSAGE_HEADERS) {
    const v = headers[name];
    if (v !== undefined) table[name] = v;
  }
  return {
    persistent: true,
    mandatory: true,
    messageId: headers["webhook-id"] ?? "",
    contentType: "application/json",
    timestamp: Number(headers["webhook-timestamp"] ?? 0) || undefined,
    headers: table,
  };
}

const ACKED: Outcome = { ok: true, status: null, body: "acked", retryAfterMs: null, failure: null };

/** A short reason for a failed connect or a closed channel/connection. */
export function amqpReason(err: unknown): string {
  const e = err as { code?: string | number; message?: string };
  const text = `${e?.code ?? ""} ${e?.message ?? String(err)}`;
  if (/ECONNREFUSED/.test(text)) return "connection refused";
  if (/ECONNRESET|socket closed|Socket closed|EPIPE/i.test(text)) return "connection reset by the broker";
  if (/ACCESS_REFUSED|auth|PLAIN login refused/i.test(text)) return "the broker refused the credentials";
  if (/ETIMEDOUT|timeout/i.test(text)) return "connection timed out";
  return (e?.message ?? String(err)).slice(0, 300);
}

export class AmqpSender {
  private readonly links = new Map<string, Link>();
  private readonly onAbort = new WeakMap<AbortSignal, Set<() => void>>();

  constructor(private readonly timeoutMs: number) {}

  private link(q: QueueTarget): Link {
    const key = `${q.broker}|${q.brokerUrl}`;
    let link = this.links.get(key);
    if (link) return link;
    const conn = amqp.connect(q.brokerUrl, { timeout: this.timeoutMs }).then((c) => {
      const drop = () => {
        if (this.links.get(key) === created) this.links.delete(key);
      };
      c.on("close", drop);
      c.on("error", drop);
      return c;
    });
    const created: Link = { conn, channels: new Map(), ready: new Map() };
    conn.catch(() => {
      if (this.links.get(key) === created) this.links.delete(key);
    });
    this.links.set(key, created);
    return created;
  }

  private lane(link: Link, exchange: string): Promise<Lane> {
    let lane = link.channels.get(exchange);
    if (lane) return lane;
    lane = link.conn.then(async (conn) => {
      const channel = await conn.createConfirmChannel();
      const made: Lane = { channel, returned: new Map(), closed: undefined };
      channel.on("return", (msg: Message) => {
        const id = msg.properties.messageId as string | undefined;
        if (id) made.returned.set(id, `returned: ${(msg.fields as { replyText?: string }).replyText ?? "unroutable"}`);
      });
      const drop = (err?: unknown) => {
        made.closed ??= err ? `channel closed: ${amqpReason(err)}` : "channel closed";
        if (link.channels.get(exchange) === lane) link.channels.delete(exchange);
        if (link.ready.get(exchange) === made) link.ready.delete(exchange);
      };
      channel.on("error", drop);
      channel.on("close", () => drop());
      link.ready.set(exchange, made);
      return made;
    });
    lane.catch(() => {
      if (link.channels.get(exchange) === lane) link.channels.delete(exchange);
    });
    link.channels.set(exchange, lane);
    return lane;
  }

  /**
   * One listener per abort signal (the worker's, shared by every attempt of its life) calling the attempts in flight,
   * rather than a listener added and removed per attempt.
   */
  private aborting(signal: AbortSignal): Set<() => void> {
    let set = this.onAbort.get(signal);
    if (!set) {
      const made = new Set<() => void>();
      signal.addEventListener("abort", () => {
        for (const f of [...made]) f();
      }, { once: true });
      this.onAbort.set(signal, (set = made));
    }
    return set;
  }

  send(req: AttemptRequest, q: QueueTarget, signal: AbortSignal): Promise<Outcome> {
    if (signal.aborted) return Promise.resolve(fail("attempt aborted by shutdown", "aborted"));
    // The first of: the broker's answer, the attempt's deadline, the worker's shutdown.
    return new Promise<Outcome>((resolve) => {
      const aborts = this.aborting(signal);
      const settle = (out: Outcome) => {
        clearTimeout(timer);
        aborts.delete(onAbort);
        resolve(out);
      };
      const onAbort = () => settle(fail("attempt aborted by shutdown", "aborted"));
      const timer = setTimeout(() => settle(fail("timeout", "timeout")), this.timeoutMs);
      aborts.add(onAbort);
      const lane = this.readyLane(q);
      if (lane) this.publish(req, q, lane, settle);
      else {
        this.lane(this.link(q), q.exchange).then(
          (l) => this.publish(req, q, l, settle),
          (err: unknown) => settle(fail(amqpReason(err), "connect")),
        );
      }
    });
  }

  /** The exchange's confirm channel if it is open already (no promise to wait on). */
  private readyLane(q: QueueTarget): Lane | undefined {
    const lane = this.links.get(`${q.broker}|${q.brokerUrl}`)?.ready.get(q.exchange);
    return lane && lane.closed === undefined ? lane : undefined;
  }

  private publish(req: AttemptRequest, q: QueueTarget, lane: Lane, settle: (out: Outcome) => void): void {
    const options = amqpMessageOptions(req.headers);
    const messageId = options.messageId;
    try {
      lane.channel.publish(
        q.exchange,
        q.routingKey,
        Buffer.from(req.body),
        options,
        (err) => {
          const returned = lane.returned.get(messageId);
          if (returned !== undefined) lane.returned.delete(messageId);
          if (err) {
            // A channel closed by the broker fails its confirms before the channel's error event names the
            // reason (e.g. NOT_FOUND - no exchange): look once the event had its turn.
            setImmediate(() => settle(fail(lane.closed ?? (/nack/i.test(String(err?.message ?? err)) ? "nacked" : `channel closed: ${amqpReason(err)}`))));
          } else if (returned !== undefined) settle(fail(returned));
          else settle(ACKED);
        },
      );
    } catch (err) {
      // publish throws on a channel already closed (the lane is dropped; the next attempt opens a new one).
      settle(fail(lane.closed ?? `channel closed: ${amqpReason(err)}`));
    }
  }

  async close(): Promise<void> {
    const links = [...this.links.values()];
    this.links.clear();
    await Promise.all(links.map(async (l) => (await l.conn.catch(() => undefined))?.close().catch(() => {})));
  }
}
