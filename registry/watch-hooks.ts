// The seam between the registry's writes and the Redis watch index (issue 3 fills it): each hook runs after the
// PostgreSQL change committed and before the RPC answers. PostgreSQL is the truth, so a failing hook is logged and
// the write still succeeds; the index catches up by its own means (outbox or rebuild).
import type { SubscriptionRow } from "./schema.ts";

export interface WatchHooks {
  /** A subscription was created or its url, events or status changed. */
  subscriptionChanged(row: SubscriptionRow): Promise<void>;
  /** A subscription was deleted (its address rows are already gone with it). */
  subscriptionDeleted(row: SubscriptionRow): Promise<void>;
  /** A key was revoked or its chains changed: its subscriptions' matching changes. */
  keyChanged(keyId: string): Promise<void>;
}

/** No watch index yet: nothing to keep in step. */
export const noWatchHooks: WatchHooks = {
  subscriptionChanged: async () => {},
  subscriptionDeleted: async () => {},
  keyChanged: async () => {},
};
