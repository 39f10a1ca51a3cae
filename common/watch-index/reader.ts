// Lookups, never "not watched" for a shard rebuilding or behind PostgreSQL; all the matcher imports (README.md).
import type { Redis } from "../redis.ts";
import { AppliedPositionsReader } from "./applied-positions.ts";
import { decodeMeta, DEFAULT_SHARDS, watchIndexHandle, type Watcher, type WatchIndexHandle } from "./layout.ts";
import type { SqlExecutor } from "./positions.ts";
import { runAll, type Arg, type ScriptCall } from "./scripts.ts";

/** The matcher's whole view of the index: these, and the handle they take. */
export { watchIndexHandle, type Watcher, type WatchIndexHandle } from "./layout.ts";

export class WatchIndexNotReadyError extends Error {
  constructor(
    readonly chainId: string,
    /** Redis was behind PostgreSQL's applied changes (not a rebuild): they were not replayed in time. */
    readonly behind = false,
  ) {
    super(behind ? `the watch index of ${chainId} lacks changes PostgreSQL applied; waiting for their replay` : `the watch index of ${chainId} is being rebuilt`);
    this.name = "WatchIndexNotReadyError";
  }
}

export interface LookupOptions {
  /** Also return watchers that must not match (disabled subscription, revoked key, chain off). */
  includeInactive?: boolean;
  /** How long to wait for a rebuild before throwing WatchIndexNotReadyError. */
  waitMs?: number;
  /**
   * Per shard, the position PostgreSQL says was applied (positions.ts), read before this lookup: a shard whose Redis
   * position is lower lost changes (a failover to a lagging replica) and is asked again, like a shard not ready,
   * until the registry has replayed them (or `waitMs`). Called once, just before the first Redis round trip, whose
   * answer it then waits for: the PostgreSQL read runs beside it, and a read that lands after the Redis one only
   * asks for more, never less.
   */
  minPositions?: () => Promise<readonly number[]>;
}

type LookupReply = [-1] | [1, string[], string[], string[], string[], string];

/**
 * The watched ones among `addresses` (base58) on the handle's chain, each with its watchers: one script per shard
 * that holds any of them, sent as one round trip per Redis node. By default only active watchers are returned, and an
 * address with none is absent from the map. A shard that is not ready is asked again until it is (or `waitMs`).
 */
export async function lookup(index: WatchIndexHandle, addresses: readonly string[], opts: LookupOptions = {}): Promise<Map<string, Watcher[]>> {
  const out = new Map<string, Watcher[]>();
  const unique = [...new Set(addresses)];
  if (unique.length === 0) return out;
  const groups = index.groupByShard(unique);
  let pending: ScriptCall[] = [];
  const asked: string[][] = [];
  const askedShards: number[] = [];
  for (const s of index.all) {
    const group = groups[s.shard]!;
    if (group.length === 0) continue;
    const args: Arg[] = [s.base];
    for (const [bucket, a] of group) args.push(bucket, a);
    pending.push({ name: "LOOKUP", key: s.state, args });
    asked.push(group.map(([, a]) => a));
    askedShards.push(s.shard);
  }
  let pendingAddresses = asked;
  let pendingShards = askedShards;
  let behind = false;
  const deadline = Date.now() + (opts.waitMs ?? 30_000);
  let pause = 25;
  // Watchers with the same meta and key state share one object (callers read them, never change them).
  const shared = new Map<string, Watcher>();
  const required = opts.minPositions?.();
  // Awaited below after the Redis answer; a failure then is thrown there, not reported as unhandled meanwhile.
  required?.catch(() => {});
  for (;;) {
    const replies = (await runAll(index.redis, pending)) as LookupReply[];
    const minimum = required ? await required : [];
    const retry: ScriptCall[] = [];
    const retryAddresses: string[][] = [];
    const retryShards: number[] = [];
    behind = false;
    replies.forEach((reply, i) => {
      const lagging = reply[0] === 1 && Number(reply[5] ?? 0) < (minimum[pendingShards[i]!] ?? 0);
      if (reply[0] !== 1 || lagging) {
        if (lagging) behind = true;
        retry.push(pending[i]!);
        retryAddresses.push(pendingAddresses[i]!);
        retryShards.push(pendingShards[i]!);
        return;
      }
      const [, values, handles, metas, keyStates] = reply;
      const watchers = new Map<string, Watcher | null>();
      handles.forEach((h, j) => {
        const m = metas[j];
        if (!m) return watchers.set(h, null);
        const id = `${m}\n${keyStates[j]}`;
        let w = shared.get(id);
        if (!w) {
          const meta = decodeMeta(m);
          const active = meta.enabled && keyStates[j] === "1";
          w = { subscriptionId: meta.subscriptionId, keyId: meta.keyId, active, events: meta.events, match: meta.match };
          shared.set(id, w);
        }
        watchers.set(h, w);
      });
      pendingAddresses[i]!.forEach((address, j) => {
        const v = values[j];
        if (!v) return;
        const list: Watcher[] = [];
        for (const h of v.split(",")) {
          const w = watchers.get(h);
          if (w && (w.active || opts.includeInactive)) list.push(w);
        }
        if (list.length > 0) out.set(address, list);
      });
    });
    if (retry.length === 0) return out;
    if (Date.now() >= deadline) throw new WatchIndexNotReadyError(index.chainId, behind);
    await Bun.sleep(pause);
    pause = Math.min(pause * 2, 250);
    pending = retry;
    pendingAddresses = retryAddresses;
    pendingShards = retryShards;
  }
}

export interface WatchIndexReaderOptions {
  prefix: string;
  shards?: number;
  /** How long a lookup waits for a rebuild or a replay (LookupOptions.waitMs). */
  waitMs?: number;
}

/**
 * The matcher's lookups: every one compares Redis with the positions PostgreSQL says were applied before it
 * (applied-positions.ts), so a Redis that lost applied changes is waited for until the registry replayed them.
 */
export class WatchIndexReader {
  private readonly handles = new Map<string, WatchIndexHandle>();
  private readonly applied: AppliedPositionsReader;

  constructor(
    private readonly redis: Redis,
    db: SqlExecutor,
    private readonly opts: WatchIndexReaderOptions,
  ) {
    this.applied = new AppliedPositionsReader(db, opts.shards ?? DEFAULT_SHARDS);
  }

  private handle(chainId: string): WatchIndexHandle {
    let h = this.handles.get(chainId);
    if (!h) this.handles.set(chainId, (h = watchIndexHandle(this.redis, { prefix: this.opts.prefix, chainId, shards: this.opts.shards })));
    return h;
  }

  lookup(chainId: string, addresses: readonly string[]): Promise<Map<string, Watcher[]>> {
    return lookup(this.handle(chainId), addresses, { waitMs: this.opts.waitMs, minPositions: () => this.applied.read(chainId) });
  }
}
