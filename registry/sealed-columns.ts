// The registry's sealed values and the row each is bound to (common/keyring.ts rowBinding): a subscription's signing
// secrets (current and previous share the row's binding, so a rotation moves the current one into the previous
// column as it is), a broker's URL, and the stored idempotent responses.
import { idempotencySealedColumn } from "../common/idempotency.ts";
import { rowBinding } from "../common/keyring.ts";
import type { SealedColumn } from "../common/reseal.ts";
import { brokers, idempotencyRecords, subscriptions } from "./schema.ts";

export const subscriptionSecretBinding = (subscriptionId: string) => rowBinding("subscriptions.secret", subscriptionId);
export const brokerUrlBinding = (broker: string) => rowBinding("brokers.url", broker);

export const REGISTRY_SEALED_COLUMNS: readonly SealedColumn[] = [
  { table: "subscriptions", column: subscriptions.secret.name, key: [subscriptions.id.name], binding: ([id]) => subscriptionSecretBinding(id!) },
  { table: "subscriptions", column: subscriptions.previousSecret.name, key: [subscriptions.id.name], binding: ([id]) => subscriptionSecretBinding(id!) },
  { table: "brokers", column: brokers.url.name, key: [brokers.name.name], binding: ([name]) => brokerUrlBinding(name!) },
  idempotencySealedColumn(idempotencyRecords),
];
