// The registry's sealed values and the row each is bound to (common/keyring.ts rowBinding): a subscription's signing
// secrets (current and previous share the row's binding, so a rotation moves the current one into the previous
// column as it is), a broker's URL, and the stored idempotent responses.
import { rowBinding } from "../common/keyring.ts";

export const subscriptionSecretBinding = (subscriptionId: string) => rowBinding("subscriptions.secret", subscriptionId);
export const brokerUrlBinding = (broker: string) => rowBinding("brokers.url", broker);

