// What the /v1/subscriptions operations share: the id check, the registry's answer, and the create and replace body
// as the registry's fields. Maps JSON ⇄ registry RPCs; every business rule (URL policy, events, description,
// idempotency records, page tokens) is the registry's.
import { t, type Static } from "elysia";
import { MAX_DESCRIPTION_LENGTH, internalError, notFound } from "../../../common/contract/index.ts";
import { isId } from "../../../common/ids.ts";
import type { Subscription } from "../../../gen/webhooks/registry/v1/registry_pb.ts";
import { principalOf } from "../../context.ts";
import { matchRequest } from "../../render.ts";
import { DestinationInput, EventsInput, InputObject, MatchInput, StatusInput } from "../../schemas.ts";

export const TAGS = ["subscriptions"];

/** A malformed id cannot exist: it is simply not found (docs/CONTRACT.md). */
export function subscriptionId(id: string): string {
  if (!isId("sub", id)) throw notFound();
  return id;
}

/** The caller's key and the subscription the path names. */
export function subscriptionRef(request: Request, rawId: string): { keyId: string; id: string } {
  const { keyId } = principalOf(request);
  return { keyId, id: subscriptionId(rawId) };
}

export function present(s: Subscription | undefined): Subscription {
  // The registry always answers with the subscription; its absence is a broken dependency, not the caller's fault.
  if (!s) throw internalError();
  return s;
}

/** The JSON destination as the registry's message; omitted fields are "" (the registry says which are required). */
function destinationRequest(d: Static<typeof DestinationInput>) {
  return {
    type: d.type,
    url: d.url ?? "",
    broker: d.broker ?? "",
    exchange: d.exchange ?? "",
    routingKey: d.routingKey ?? "",
    subject: d.subject ?? "",
  };
}

export const SubscriptionBody = InputObject({
  destination: DestinationInput,
  events: EventsInput,
  status: t.Optional(StatusInput),
  description: t.Optional(t.String({ description: `Free label, at most ${MAX_DESCRIPTION_LENGTH} characters. Empty when omitted.` })),
  match: t.Optional(MatchInput),
});

/**
 * A create or replace body as the registry's fields. An omitted status is `omittedStatus`: "" on create (the
 * registry's default), "enabled" on a replacement, where whatever is omitted returns to its default.
 */
export function subscriptionFields(body: Static<typeof SubscriptionBody>, omittedStatus: "" | "enabled") {
  return {
    destination: destinationRequest(body.destination),
    events: body.events,
    status: body.status ?? omittedStatus,
    description: body.description ?? "",
    match: matchRequest(body.match),
  };
}
