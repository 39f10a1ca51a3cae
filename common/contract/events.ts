// The event kinds of the public API (docs/CONTRACT.md "Events and delivery", "Account activity"): what a subscription
// lists, what the matcher makes, what the deliverer sends and what the docs and the console offer.

/** A successful transfer appeared in a new block (the head stream's kind; provisional). */
export const BROADCASTED = "wallet.transfer.broadcasted";
/** A successful transfer's block is solidified (final). */
export const CONFIRMED = "wallet.transfer.confirmed";
/** A transfer failed for good: a failed result in a solidified block, or dropped by a fork (final). */
export const FAILED = "wallet.transfer.failed";
/** The test event of POST /v1/subscriptions/{id}/test. */
export const PING = "service.ping";

export const TRANSFER_KINDS = [BROADCASTED, CONFIRMED, FAILED] as const;
export type TransferKind = (typeof TRANSFER_KINDS)[number];

/**
 * Account activity other than transfers, each with a provisional kind (`.broadcasted`, the head stream's) and a
 * final one (`.confirmed`, the solidified stream's); a broadcasted activity a fork dropped gets no final kind.
 */
export const ACTIVITY_FAMILIES = ["approval", "permission", "resource", "blacklist"] as const;
export type ActivityFamily = (typeof ACTIVITY_FAMILIES)[number];

export const APPROVAL_BROADCASTED = "wallet.approval.broadcasted";
export const APPROVAL_CONFIRMED = "wallet.approval.confirmed";
export const PERMISSION_BROADCASTED = "wallet.permission.broadcasted";
export const PERMISSION_CONFIRMED = "wallet.permission.confirmed";
export const RESOURCE_BROADCASTED = "wallet.resource.broadcasted";
export const RESOURCE_CONFIRMED = "wallet.resource.confirmed";
export const BLACKLIST_BROADCASTED = "wallet.blacklist.broadcasted";
export const BLACKLIST_CONFIRMED = "wallet.blacklist.confirmed";

export const ACTIVITY_KINDS = [
  APPROVAL_BROADCASTED,
  APPROVAL_CONFIRMED,
  PERMISSION_BROADCASTED,
  PERMISSION_CONFIRMED,
  RESOURCE_BROADCASTED,
  RESOURCE_CONFIRMED,
  BLACKLIST_BROADCASTED,
  BLACKLIST_CONFIRMED,
] as const;
export type ActivityKind = (typeof ACTIVITY_KINDS)[number];

/** The two kinds of a family: wallet.<family>.broadcasted and wallet.<family>.confirmed. */
export function activityKinds(family: ActivityFamily): { broadcasted: ActivityKind; confirmed: ActivityKind } {
  return { broadcasted: `wallet.${family}.broadcasted` as ActivityKind, confirmed: `wallet.${family}.confirmed` as ActivityKind };
}

/** The roles an activity's addresses play (matchedAddresses[].role). */
export const ACTIVITY_ROLES = ["owner", "spender", "receiver", "blacklisted"] as const;
export type ActivityRole = (typeof ACTIVITY_ROLES)[number];

/** wallet.resource.*'s data.type: which Stake 2.0 contract, vote or reward withdrawal. */
export const RESOURCE_MOVE_TYPES = [
  "freeze", "unfreeze", "withdraw_unfrozen", "cancel_unfreeze", "delegate", "undelegate", "vote", "withdraw_rewards",
] as const;
export type ResourceMoveType = (typeof RESOURCE_MOVE_TYPES)[number];

/** wallet.resource.*'s data.resource where the contract names one (TRON_POWER where the chain allows freezing for it). */
export const RESOURCE_NAMES = ["ENERGY", "BANDWIDTH", "TRON_POWER"] as const;

/** wallet.blacklist.*'s data.type: AddedBlackList, RemovedBlackList, DestroyedBlackFunds. */
export const BLACKLIST_TYPES = ["added", "removed", "funds_destroyed"] as const;
export type BlacklistType = (typeof BLACKLIST_TYPES)[number];

/** Every kind, in the order the API lists them. */
export const EVENT_KINDS = [...TRANSFER_KINDS, ...ACTIVITY_KINDS, PING] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

export function isEventKind(value: string): value is EventKind {
  return (EVENT_KINDS as readonly string[]).includes(value);
}

export function isTransferKind(value: string): value is TransferKind {
  return (TRANSFER_KINDS as readonly string[]).includes(value);
}

export function isActivityKind(value: string): value is ActivityKind {
  return (ACTIVITY_KINDS as readonly string[]).includes(value);
}

/** The family of an activity kind ("wallet.approval.confirmed" → "approval"). */
export function familyOf(kind: ActivityKind): ActivityFamily {
  return kind.split(".")[1] as ActivityFamily;
}

/** Whether a kind is final (the solidified stream's): the transfer's confirmed / failed, an activity's confirmed. */
export function isFinalKind(kind: string): boolean {
  return kind === CONFIRMED || kind === FAILED || (isActivityKind(kind) && kind.endsWith(".confirmed"));
}
