// The seam between the registry's writes and the Redis watch index (issue 3 fills it): each hook runs after the
// PostgreSQL change committed and before the RPC answers. PostgreSQL is the truth, so a failing hook is logged and
// the write still succeeds; the index catches up by its own means (rebuild). A crash between the COMMIT and the hook
// would leave no trace, hence `announce` around both (registry/watch-index.ts).
import type { Config } from "../common/config.ts";
import { log } from "../common/logger.ts";
import type { Redis } from "../common/redis.ts";
import type { SubscriptionRow } from "./schema.ts";
import type { RegistryStore } from "./store.ts";
import { WatchIndex } from "./watch-index.ts";

export interface WatchHooks {
  /**
   * Called before a change whose hook follows its COMMIT; the function it resolves to is called once the hook ran (or
   * the change failed). Null: the index could not be told and is already marked for a rebuild, which brings the
   * change in, so the hook may be skipped.
   */
  announce(): Promise<(() => Promise<void>) | null>;
  /** A subscription's url, events or status changed (not called at create: a new subscription watches nothing). */
  subscriptionChanged(row: SubscriptionRow): Promise<void>;
  /** A subscription was deleted (its address rows are already gone with it). */
  subscriptionDeleted(row: SubscriptionRow): Promise<void>;
  /** A key was revoked or its chains changed: its subscriptions' matching changes. */
  keyChanged(keyId: string): Promise<void>;
}

/**
 * A change that commits on its own, then its hook: announced to the watch index before the change and withdrawn
 * after the hook, so a crash between the COMMIT and the hook's Redis write is found and repaired. The hook runs only
 * when the change found its row and the announcement was taken (otherwise a rebuild is already due). Used by the
 * registry's RPCs and by `bun run keys`; each passes a hook that handles its own failures.
 */
export async function changeThenHook<T>(
  hooks: WatchHooks,
  change: () => Promise<T | undefined>,
  hook: (row: T) => Promise<void>,
): Promise<T | undefined> {
  const withdraw = await hooks.announce();
  try {
    const row = await change();
    if (row !== undefined && withdraw) await hook(row);
    return row;
  } finally {
    await withdraw?.();
  }
}

/** No watch index yet: nothing to keep in step. */
export const noWatchHooks: WatchHooks = {
  announce: async () => async () => {},
  subscriptionChanged: async () => {},
  subscriptionDeleted: async () => {},
  keyChanged: async () => {},
};

export interface WatchHookDeps {
  config: Config;
  store: RegistryStore;
  redis: Redis;
}

/**
 * The hooks the registry and `bun run keys` use: the one place where the watch index (issue 3) plugs in, so the
 * service and the CLI keep it in step the same way (registry/watch-index.ts).
 */
export function createWatchHooks(deps: WatchHookDeps): WatchHooks {
  return new WatchIndex(deps.store.db, deps.redis, deps.config.redisPrefix, log.child({ part: "watch-index" }), undefined, {
    shards: deps.config.watchIndexShards,
  }).hooks();
}
