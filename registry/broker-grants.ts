// Broker namespaces: which exchanges (AMQP) and subjects (NATS) an API key may name on a registered broker. Pure
// checks over the key's grants (registry/schema.ts brokerGrants); the store reads them, the CLI writes them.
//
// - A key with no grant on a broker sees it as not registered (the same answer as an unknown name), so one
//   customer learns nothing of the brokers the operator set up for others.
// - NATS: the subject must start with one of the key's prefixes.
// - AMQP: a named exchange must start with one; the default exchange ("", which routes to any queue by name) needs
//   a grant with defaultExchange, and then the routing key (the queue's name) must start with that grant's prefix.
// - A prefix is matched as text: give "tenant-a." rather than "tenant-a" so "tenant-ab.x" stays out.
import { ApiError, invalidRequest } from "../common/contract/index.ts";

/** Placeholder in a grant's prefix for the id of the key it is applied to (for a grant to every key, "*"). */
export const KEY_ID_PLACEHOLDER = "{keyId}";
/** A grant's key id that means every key. */
export const EVERY_KEY = "*";

export interface BrokerGrant {
  keyId: string;
  prefix: string;
  defaultExchange: boolean;
}

/** The destination fields a grant governs (null where the type has none). */
export interface QueueTarget {
  type: "amqp" | "nats";
  broker: string;
  exchange: string | null;
  routingKey: string | null;
  subject: string | null;
}

/** The prefixes that apply to `keyId`: its own grants and the every-key ones, placeholders filled in. */
export function grantsOf(keyId: string, grants: readonly BrokerGrant[]): BrokerGrant[] {
  return grants
    .filter((g) => g.keyId === keyId || g.keyId === EVERY_KEY)
    .map((g) => ({ ...g, prefix: g.prefix.replaceAll(KEY_ID_PLACEHOLDER, keyId) }));
}

function prefixList(grants: readonly BrokerGrant[]): string {
  return grants.map((g) => (g.prefix === "" ? '"" (any)' : JSON.stringify(g.prefix))).join(", ");
}

/** Throws invalid_request (with the field's param) unless the key's grants on the broker cover the destination. */
export function checkGrant(target: QueueTarget, keyId: string, grants: readonly BrokerGrant[]): void {
  const mine = grantsOf(keyId, grants);
  if (mine.length === 0) {
    throw invalidRequest(`No ${target.type} broker named "${target.broker}" is registered.`, "/destination/broker");
  }
  if (target.type === "nats") {
    const subject = target.subject ?? "";
    if (mine.some((g) => subject.startsWith(g.prefix))) return;
    throw invalidRequest(`destination.subject must start with a prefix this key is granted on "${target.broker}": ${prefixList(mine)}.`, "/destination/subject");
  }
  const exchange = target.exchange ?? "";
  if (exchange !== "") {
    if (mine.some((g) => exchange.startsWith(g.prefix))) return;
    throw invalidRequest(`destination.exchange must start with a prefix this key is granted on "${target.broker}": ${prefixList(mine)}.`, "/destination/exchange");
  }
  const defaults = mine.filter((g) => g.defaultExchange);
  if (defaults.length === 0) {
    throw invalidRequest(`This key may not use the default exchange ("") of "${target.broker}"; name an exchange.`, "/destination/exchange");
  }
  const routingKey = target.routingKey ?? "";
  if (defaults.some((g) => routingKey.startsWith(g.prefix))) return;
  throw invalidRequest(
    `On the default exchange the routing key names a queue, and must start with a prefix this key is granted there: ${prefixList(defaults)}.`,
    "/destination/routingKey",
  );
}
