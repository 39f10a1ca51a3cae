// The event kinds of the public API (docs/CONTRACT.md "Events and delivery"): what a subscription lists, what the
// matcher makes, what the deliverer sends and what the docs and the console offer.

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

/** Every kind, in the order the API lists them. */
export const EVENT_KINDS = [...TRANSFER_KINDS, PING] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

export function isEventKind(value: string): value is EventKind {
  return (EVENT_KINDS as readonly string[]).includes(value);
}

export function isTransferKind(value: string): value is TransferKind {
  return (TRANSFER_KINDS as readonly string[]).includes(value);
}
