// Standard Webhooks signing: one `v1,<base64>` per live secret, newest first, space-separated (a rotation's grace
// period signs with both, so receivers switch without losing a message).
//
// The HMAC is node:crypto's (native) rather than the `standardwebhooks` library's `sign`: the library hashes in pure
// JS (fast-sha256), the largest single item of a queue delivery's CPU in a profile of bench/delivery-queues.ts.
// The scheme is the library's, byte for byte: `v1,` + base64(HMAC-SHA256(key, `${id}.${seconds}.${body}` as UTF-8)),
// key = the base64 after `whsec_`. test/unit/deliverer/rules.test.ts holds the two equal on random ids, times, bodies
// and secrets, and has the library verify ours. A secret that is not canonical base64 (never one the registry made)
// is left to the library, so its decoding rules, not ours, apply to it.
import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { MemoMap } from "../common/timing.ts";

export const USER_AGENT = "tron-webhooks/0.1 (Standard Webhooks)";

const PREFIX = "whsec_";

/** A decoded secret: the key for node:crypto, or the library's signer for a secret it must judge itself. */
type Signer = { key: Buffer } | { webhook: Webhook };

// Decoding a secret is per secret, not per delivery: deliveries of one subscription reuse it.
const MAX_SIGNERS = 10_000;
const signers = new MemoMap<string, Signer>(MAX_SIGNERS);

function makeSigner(secret: string): Signer {
  const b64 = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret;
  const key = Buffer.from(b64, "base64");
  if (key.length > 0 && key.toString("base64") === b64) return { key };
  // Throws where the library throws (an empty secret, bad base64).
  return { webhook: new Webhook(secret) };
}

function signer(secret: string): Signer {
  let s = signers.get(secret);
  if (!s) {
    s = makeSigner(secret);
    signers.set(secret, s);
  }
  return s;
}

function signOne(secret: string, eventId: string, at: Date, body: string, toSign: string): string {
  const s = signer(secret);
  if ("webhook" in s) return s.webhook.sign(eventId, at, body);
  return `v1,${createHmac("sha256", s.key).update(toSign, "utf8").digest("base64")}`;
}

export function signatureHeader(secrets: readonly string[], eventId: string, at: Date, body: string): string {
  if (secrets.length === 0) throw new Error("no signing secret");
  const toSign = `${eventId}.${Math.floor(at.getTime() / 1000)}.${body}`;
  if (secrets.length === 1) return signOne(secrets[0]!, eventId, at, body, toSign);
  return secrets.map((s) => signOne(s, eventId, at, body, toSign)).join(" ");
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
