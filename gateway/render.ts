// Registry messages → the public JSON of CONTRACT.md "Subscriptions". Which `filters` and whether the secret
// appear depends on the endpoint, so each view is named for where it is used.
import type { Static } from "elysia";
import type { AddressEntry, Destination, Subscription } from "../gen/webhooks/registry/v1/registry_pb.ts";
import type { AddressEntrySchema, SubscriptionSchema } from "./schemas.ts";

export type AddressJson = Static<typeof AddressEntrySchema>;
export type SubscriptionJson = Static<typeof SubscriptionSchema>;

/**
 * - "created": filters `{addresses: [], hasMore: false}` (POST /v1/subscriptions)
 * - "detailed": up to 200 inlined addresses and `hasMore` (GET by id, rotate, address changes)
 * - "summary": filters exactly `{addresses: []}` (list items, PUT of the subscription)
 */
export type SubscriptionView = "created" | "detailed" | "summary";

/** ISO 8601 UTC with milliseconds. */
export function isoTime(ms: bigint | number): string {
  return new Date(Number(ms)).toISOString();
}

export function renderAddress(a: AddressEntry): AddressJson {
  return { chainId: a.chainId, address: a.address };
}

/** The destination as it was given: only its type's fields (the registry stores only these three types). */
export function renderDestination(d: Destination | undefined): SubscriptionJson["destination"] {
  switch (d?.type) {
    case "amqp":
      return { type: "amqp", broker: d.broker, exchange: d.exchange, routingKey: d.routingKey };
    case "nats":
      return { type: "nats", broker: d.broker, subject: d.subject };
    default:
      return { type: "https", url: d?.url ?? "" };
  }
}

/** `withSecret` only on the create and rotate responses: the secret is shown there and nowhere else. */
export function renderSubscription(s: Subscription, view: SubscriptionView, withSecret = false): SubscriptionJson {
  const destination = renderDestination(s.destination);
  if (withSecret && s.destination?.secret) destination.secret = s.destination.secret;
  const filters: SubscriptionJson["filters"] =
    view === "created"
      ? { addresses: [], hasMore: false }
      : view === "detailed"
        ? { addresses: s.addresses.map(renderAddress), hasMore: s.hasMore }
        : { addresses: [] };
  return {
    id: s.id,
    destination,
    events: [...s.events],
    filters,
    status: s.status === "disabled" ? "disabled" : "enabled",
    description: s.description,
    dateCreated: isoTime(s.dateCreatedMs),
    dateUpdated: isoTime(s.dateUpdatedMs),
  };
}
