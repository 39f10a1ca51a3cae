// Registry messages → the public JSON of CONTRACT.md "Subscriptions". Which `filters` and whether the secret
// appear depends on the endpoint, so each view is named for where it is used.
import type { Static } from "elysia";
import type { AddressEntry, Subscription } from "../gen/webhooks/registry/v1/registry_pb.ts";
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

/** `withSecret` only on the create and rotate responses: the secret is shown there and nowhere else. */
export function renderSubscription(s: Subscription, view: SubscriptionView, withSecret = false): SubscriptionJson {
  // Only https exists today, and the registry stores only the two statuses.
  const destination: SubscriptionJson["destination"] = { type: "https", url: s.destination?.url ?? "" };
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
