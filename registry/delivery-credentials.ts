// A delivery target's secrets and broker URL in clear, opened with the store's keyring (RegistryStore.open): the
// decryption side of the sealed columns (registry/sealed-columns.ts), kept out of the store's statements.
import { brokerUrlBinding, subscriptionSecretBinding } from "./sealed-columns.ts";
import type { DeliveryCredentials, DeliveryTargetRow } from "./db/types.ts";

/** Opens a value sealed for `binding`; throws when it does not decrypt. */
export type Opener = (sealed: string, binding: string) => string;

/**
 * What a delivery to the target needs in clear: its signing secrets, newest first (the previous one only while its
 * grace lasts), and its broker's URL; or the first of them that cannot be decrypted (a damaged row, or one sealed
 * under another APP_SECRET). Never throws: one unreadable row must not fail the others read with it.
 */
export function deliveryCredentials(open: Opener, t: DeliveryTargetRow, now = Date.now()): DeliveryCredentials {
  const row = t.subscription;
  const secret = tryOpen(open, row.secret, subscriptionSecretBinding(row.id));
  if (secret === undefined) return { ok: false, unreadable: "secret" };
  const secrets = [secret];
  if (row.previousSecret && row.previousSecretExpiresAt && row.previousSecretExpiresAt.getTime() > now) {
    const previous = tryOpen(open, row.previousSecret, subscriptionSecretBinding(row.id));
    if (previous === undefined) return { ok: false, unreadable: "previous_secret" };
    secrets.push(previous);
  }
  let brokerUrl = "";
  if (t.broker) {
    const url = tryOpen(open, t.broker.url, brokerUrlBinding(t.broker.name));
    if (url === undefined) return { ok: false, unreadable: "broker_url" };
    brokerUrl = url;
  }
  return { ok: true, secrets, brokerUrl };
}

/** The plaintext, or undefined when `sealed` does not decrypt under this process's key. */
export function tryOpen(open: Opener, sealed: string, binding: string): string | undefined {
  try {
    return open(sealed, binding);
  } catch {
    return undefined;
  }
}
