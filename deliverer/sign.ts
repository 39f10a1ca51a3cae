// Standard Webhooks signing through the `standardwebhooks` library: one `v1,<base64>` per live secret, newest
// first, space-separated (a rotation's grace period signs with both, so receivers switch without losing a message).
import { Webhook } from "standardwebhooks";

export const USER_AGENT = "tron-webhooks/0.1 (Standard Webhooks)";

// Building a Webhook decodes the secret; deliveries of one subscription reuse it.
const signers = new Map<string, Webhook>();
const MAX_SIGNERS = 10_000;

function signer(secret: string): Webhook {
  let w = signers.get(secret);
  if (!w) {
    if (signers.size >= MAX_SIGNERS) signers.clear();
    w = new Webhook(secret);
    signers.set(secret, w);
  }
  return w;
}

export function signatureHeader(secrets: readonly string[], eventId: string, at: Date, body: string): string {
  if (secrets.length === 0) throw new Error("no signing secret");
  return secrets.map((s) => signer(s).sign(eventId, at, body)).join(" ");
}

export interface DeliveryHeaderInput {
  eventId: string;
  subscriptionId: string;
  /** Newest first. */
  secrets: readonly string[];
  body: string;
  at: Date;
}

export function deliveryHeaders(input: DeliveryHeaderInput): Record<string, string> {
  return {
    "content-type": "application/json",
    "user-agent": USER_AGENT,
    "webhook-id": input.eventId,
    "webhook-timestamp": String(Math.floor(input.at.getTime() / 1000)),
    "webhook-signature": signatureHeader(input.secrets, input.eventId, input.at, input.body),
    "x-subscription-id": input.subscriptionId,
  };
}
