// What a receiver needs: the payload of each event kind (the document's `webhooks` section) and the signature check
// (Standard Webhooks, through the `standardwebhooks` library: the HMAC is never written here).
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import type { components, webhooks } from "./schema.ts";

export { WebhookVerificationError };

/** An event kind: a key of the webhooks section. */
export type EventKind = keyof webhooks;

type PayloadOf<K extends EventKind> = NonNullable<webhooks[K]["post"]> extends {
  requestBody: { content: { "application/json": infer T } };
}
  ? T
  : never;

/** The body each kind delivers. */
export type WebhookPayloads = { [K in EventKind]: PayloadOf<K> };
/** Any delivery's body; `kind` tells which. */
export type WebhookEvent = WebhookPayloads[EventKind];
export type WalletTransferBroadcasted = components["schemas"]["WalletTransferBroadcasted"];
export type WalletTransferConfirmed = components["schemas"]["WalletTransferConfirmed"];
export type WalletTransferFailed = components["schemas"]["WalletTransferFailed"];
export type ServicePing = components["schemas"]["ServicePing"];
/** A transfer event's `data` (the fields every transfer kind shares, and its own). */
export type TransferData = (WalletTransferBroadcasted | WalletTransferConfirmed | WalletTransferFailed)["data"];
export type WalletApprovalBroadcasted = components["schemas"]["WalletApprovalBroadcasted"];
export type WalletApprovalConfirmed = components["schemas"]["WalletApprovalConfirmed"];
export type WalletPermissionBroadcasted = components["schemas"]["WalletPermissionBroadcasted"];
export type WalletPermissionConfirmed = components["schemas"]["WalletPermissionConfirmed"];
export type WalletResourceBroadcasted = components["schemas"]["WalletResourceBroadcasted"];
export type WalletResourceConfirmed = components["schemas"]["WalletResourceConfirmed"];
export type WalletBlacklistBroadcasted = components["schemas"]["WalletBlacklistBroadcasted"];
export type WalletBlacklistConfirmed = components["schemas"]["WalletBlacklistConfirmed"];
/** An account activity event's `data`, per family (`.confirmed` adds solidifiedBlockNumber). */
export type ApprovalData = (WalletApprovalBroadcasted | WalletApprovalConfirmed)["data"];
export type PermissionData = (WalletPermissionBroadcasted | WalletPermissionConfirmed)["data"];
export type ResourceData = (WalletResourceBroadcasted | WalletResourceConfirmed)["data"];
export type BlacklistData = (WalletBlacklistBroadcasted | WalletBlacklistConfirmed)["data"];

/** Request headers as fetch (Headers) or node:http (a record, repeated fields as arrays) give them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

function headerRecord(headers: WebhookHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof (headers as Headers).forEach === "function" && typeof (headers as Headers).get === "function") {
    (headers as Headers).forEach((value, name) => (out[name] = value));
    return out;
  }
  for (const [name, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
  }
  return out;
}

/**
 * Verifies deliveries with a subscription's signing secrets (whsec_…): one, or several while the receiver moves to a
 * rotated secret. A delivery verifies when any of them does.
 */
export class WebhookVerifier {
  readonly #signers: Webhook[];

  constructor(secrets: string | readonly string[]) {
    const list = typeof secrets === "string" ? [secrets] : secrets;
    if (list.length === 0) throw new Error("WebhookVerifier needs at least one secret");
    this.#signers = list.map((secret) => new Webhook(secret));
  }

  /**
   * The event of a delivery whose signature verifies (and whose timestamp is within five minutes of now); a
   * WebhookVerificationError otherwise. `body` is the raw body text: parsing and re-serializing it first breaks the
   * signature.
   */
  verify(body: string, headers: WebhookHeaders): WebhookEvent {
    const record = headerRecord(headers);
    let last: unknown;
    for (const signer of this.#signers) {
      try {
        return signer.verify(body, record) as WebhookEvent;
      } catch (err) {
        last = err;
      }
    }
    throw last;
  }

  /** Whether the delivery verifies (verify without the event or the error). */
  verifies(body: string, headers: WebhookHeaders): boolean {
    try {
      this.verify(body, headers);
      return true;
    } catch {
      return false;
    }
  }
}

/** One delivery checked with one secret: its event, or a WebhookVerificationError. */
export function verifyWebhook(body: string, headers: WebhookHeaders, secret: string): WebhookEvent {
  return new WebhookVerifier(secret).verify(body, headers);
}
