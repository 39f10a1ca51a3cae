// Registry messages → the public JSON of docs/CONTRACT.md "Subscriptions". Which `filters` and whether the secret
// appear depends on the endpoint, so each view is named for where it is used.
import type { Static } from "elysia";
import { DIRECTIONS, type MatchDirection } from "../common/match-conditions.ts";
import type { AddressEntry, Destination, MatchConditions, Subscription } from "../gen/webhooks/registry/v1/registry_pb.ts";
import type { AddressEntrySchema, MatchInput, MatchSchema, SubscriptionSchema } from "./schemas.ts";

export type AddressJson = Static<typeof AddressEntrySchema>;
export type SubscriptionJson = Static<typeof SubscriptionSchema>;
export type MatchJson = Static<typeof MatchSchema>;
export type MatchInputJson = Static<typeof MatchInput>;

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

/**
 * The registry always sends every field; a message without them (a stored idempotent response from before match
 * conditions existed) renders as the default, which is what such a subscription has.
 */
export function renderMatch(m: MatchConditions | undefined): MatchJson {
  const assets: MatchJson["assets"] =
    m?.assets?.items.map((a): NonNullable<MatchJson["assets"]>[number] => {
      const minAmount = a.minAmount ?? "0";
      if (a.standard === "TRC10") return { standard: "TRC10", tokenId: a.tokenId ?? "", minAmount };
      if (a.standard === "TRC20") return { standard: "TRC20", contract: a.contract ?? "", minAmount };
      return { standard: "TRX", minAmount };
    }) ?? null;
  const directions = m?.directions ? (m.directions.items.filter((d) => (DIRECTIONS as readonly string[]).includes(d)) as MatchDirection[]) : [...DIRECTIONS];
  return { assets, directions, includeZeroValue: m?.includeZeroValue ?? false };
}

/** A request's `match` as the registry takes it: absent or null is the default, and so is each absent field. */
export function matchRequest(m: MatchInputJson | undefined) {
  if (!m) return undefined;
  return {
    assets: m.assets ? { items: m.assets.map((a) => ({ standard: a.standard, tokenId: a.tokenId, contract: a.contract, minAmount: a.minAmount })) } : undefined,
    directions: m.directions ? { items: m.directions } : undefined,
    includeZeroValue: m.includeZeroValue,
  };
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
    match: renderMatch(s.match),
    status: s.status === "disabled" ? "disabled" : "enabled",
    description: s.description,
    dateCreated: isoTime(s.dateCreatedMs),
    dateUpdated: isoTime(s.dateUpdatedMs),
  };
}
