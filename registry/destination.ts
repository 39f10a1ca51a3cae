// Queue destinations and the brokers they name: pure checks that return the normalized value or throw the public
// ApiError (invalid_request with detail.param). The HTTPS URL is checked by common/ssrf.ts checkDestinationUrl.
//
// Names and keys, decided here (docs/destinations.md):
// - broker: a registered broker's name, 1 to 64 characters of [A-Za-z0-9._-] starting with a letter or digit.
// - AMQP exchange: 0 to 255 characters of [A-Za-z0-9._:-] (AMQP 0-9-1's short string, narrowed to RabbitMQ's
//   exchange-name characters); "" is the default exchange, which routes to the queue named by the routing key.
// - AMQP routing key: an AMQP short string: at most 255 bytes of UTF-8, no control characters.
// - NATS subject: 1 to 255 bytes of printable ASCII without white space, tokens separated by "." and none empty, no
//   wildcard token ("*" or ">") and no "*" or ">" anywhere, and not under a reserved prefix ("$" — "$JS.API.…",
//   "$SYS.…", "$KV.…" are the server's own API, which a customer must never reach through us — nor "_INBOX.").
import { ApiError, invalidRequest } from "../common/contract/index.ts";

const DESTINATION_TYPES = ["https", "amqp", "nats"] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];
const BROKER_TYPES = ["amqp", "nats"] as const;
export type BrokerType = (typeof BROKER_TYPES)[number];

const MAX_SHORT_STRING_BYTES = 255;

const BROKER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const EXCHANGE = /^[A-Za-z0-9._:-]*$/;
// C0 controls and DEL.
const CONTROL = /[\u0000-\u001f\u007f]/;
const SUBJECT_TOKEN = /^[!-~]+$/;

function isDestinationType(type: string): type is DestinationType {
  return (DESTINATION_TYPES as readonly string[]).includes(type);
}

export function checkDestinationType(type: string): DestinationType {
  if (!isDestinationType(type)) throw invalidRequest('destination.type must be "https", "amqp" or "nats".', "/destination/type");
  return type;
}

export function isBrokerName(name: string): boolean {
  return BROKER_NAME.test(name);
}

export function checkExchange(exchange: string): string {
  if (Buffer.byteLength(exchange) > MAX_SHORT_STRING_BYTES || !EXCHANGE.test(exchange)) {
    throw invalidRequest(
      "destination.exchange must be at most 255 characters of letters, digits, '.', '_', ':' and '-' (\"\" is the default exchange).",
      "/destination/exchange",
    );
  }
  return exchange;
}

export function checkRoutingKey(routingKey: string): string {
  if (Buffer.byteLength(routingKey) > MAX_SHORT_STRING_BYTES || CONTROL.test(routingKey)) {
    throw invalidRequest("destination.routingKey must be at most 255 bytes of UTF-8 without control characters.", "/destination/routingKey");
  }
  return routingKey;
}

export function checkSubject(subject: string): string {
  const bad = (why: string) => invalidRequest(`destination.subject ${why}`, "/destination/subject");
  if (subject === "") throw bad("is required.");
  if (Buffer.byteLength(subject) > MAX_SHORT_STRING_BYTES) throw bad("must be at most 255 bytes.");
  const tokens = subject.split(".");
  if (tokens.some((t) => t === "")) throw bad("must not have empty tokens (a leading, trailing or doubled '.').");
  if (tokens.some((t) => !SUBJECT_TOKEN.test(t))) throw bad("must be printable ASCII without white space.");
  if (/[*>]/.test(subject)) throw bad("must not contain the wildcards '*' or '>'.");
  if (subject.startsWith("$") || tokens[0] === "_INBOX") throw bad("must not use a reserved prefix ('$…', '_INBOX').");
  return subject;
}

/** What a broker URL says: its type (from the scheme) and a form safe to print (password masked). */
export interface ParsedBrokerUrl {
  type: BrokerType;
  masked: string;
}

const SCHEMES: Record<string, BrokerType> = { "amqp:": "amqp", "amqps:": "amqp", "nats:": "nats", "tls:": "nats" };

/** amqp://user:pass@host:5672/vhost, amqps://…, nats://[user:pass@]host:4222 or tls://…; throws Error with a reason. */
export function parseBrokerUrl(text: string): ParsedBrokerUrl {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`"${text}" is not a URL`);
  }
  const type = SCHEMES[url.protocol];
  if (!type) throw new Error(`unsupported scheme "${url.protocol}" (amqp://, amqps://, nats:// or tls://)`);
  if (url.hostname === "") throw new Error("the URL names no host");
  return { type, masked: maskBrokerUrl(text) };
}

/**
 * The URL with its password replaced by "***" (the user name stays: it tells operators which account is used). A
 * NATS URL with a user name and no password carries a token there (nats://TOKEN@host), so that is masked instead.
 */
export function maskBrokerUrl(text: string): string {
  try {
    const url = new URL(text);
    if (url.password) url.password = "***";
    else if (url.username && SCHEMES[url.protocol] === "nats") url.username = "***";
    return url.toString();
  } catch {
    return "***";
  }
}
