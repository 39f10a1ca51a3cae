// What GET /v1/events?address= finds an event by (event_addresses, deliverer/schema.ts): the addresses each event names.
import type { Activity } from "../gen/webhooks/delivery/v1/delivery_pb.ts";

/** A transfer: both roles, once each. */
export function transferAddresses(from: string, to: string): string[] {
  return [...new Set([from, to].filter((a) => a !== ""))];
}

/**
 * An activity: every watched address it matched, and the parties its detail names (an approval's owner and spender,
 * the account whose permissions changed, a resource move's owner and a delegation's receiver, the blacklisted user),
 * as a transfer's counterparty is found too. A permission's keys are not parties: they are what changed.
 */
export function activityAddresses(a: Activity): string[] {
  const named: string[] = [];
  const d = a.detail;
  if (d.case === "approval") named.push(d.value.owner, d.value.spender);
  else if (d.case === "permission") named.push(d.value.address);
  else if (d.case === "resource") named.push(d.value.owner, d.value.receiver ?? "");
  else if (d.case === "blacklist") named.push(d.value.address);
  return [...new Set([...a.matchedAddresses.map((m) => m.address), ...named].filter((x) => x !== ""))];
}
