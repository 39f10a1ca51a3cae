// Why a pending event is held (kept, not attempted) rather than sent: the registry names the reason with each
// delivery target (DeliveryTarget.hold_reason), the deliverer stores it with the held events, the event view shows it.
export const HOLD_REASONS = [
  // The subscription is disabled: its held events resume when it is enabled again.
  "subscription_disabled",
  // The subscription's API key is revoked.
  "key_revoked",
  // A stored signing secret (or the broker's URL) cannot be decrypted: a damaged row, or one sealed under another
  // APP_SECRET. Its events resume once the target reads again (e.g. after POST …/secrets/rotate).
  "secret_unreadable",
] as const;

export type HoldReason = (typeof HOLD_REASONS)[number];

export function isHoldReason(s: string): s is HoldReason {
  return (HOLD_REASONS as readonly string[]).includes(s);
}
