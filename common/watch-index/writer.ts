// The registry's writes: one atomic script per shard and slice, never ahead of PostgreSQL (README.md "Writer").
import { encodeMeta, type AddressChange, type SubscriptionMeta, type WatchIndexHandle } from "./layout.ts";
import { run, runAll, type Arg, type ScriptCall, type ScriptName } from "./scripts.ts";

// Large changes go in slices so one script never blocks Redis for long (each slice is still atomic).
const SLICE = 5_000;

/** Where and as what a write lands. */
export interface WriteAt {
  /** A generation to write into regardless of state (the rebuild); omitted: cur and next as state says. */
  generation?: string;
  /**
   * The change's position (registry/watch-index/applier.ts): each shard the change touches records it in its state
   * key, in the script that writes the change's last part there. Omitted: none (the rebuild's writes into a new
   * generation).
   */
  position?: number;
  /** Write only these shards (a replay of the shards a Redis lost); omitted: every shard the change touches. */
  onlyShards?: ReadonlySet<number>;
}

const posArg = (at: WriteAt): string => (at.position === undefined ? "" : String(at.position));

/** The shards of a chain a write goes to (all, or at.onlyShards). */
function targetShards(index: WatchIndexHandle, at: WriteAt) {
  return at.onlyShards ? index.all.filter((s) => at.onlyShards!.has(s.shard)) : index.all;
}

const keyArg = (active: boolean | undefined) => (active === undefined ? "" : active ? "1" : "0");

/**
 * Adds and removes one subscription's addresses on one chain, refreshing its meta and (if unknown) its key's state.
 * Returns false when the chain's index does not exist (never built or emptied): the rebuild will cover the change.
 * Each shard's part is one atomic script (per slice); the shards are written in parallel. A change with no
 * addresses registers the subscription's meta in every shard.
 */
export async function applyAddresses(
  index: WatchIndexHandle,
  meta: SubscriptionMeta,
  keyActive: boolean | undefined,
  change: AddressChange,
  at: WriteAt = {},
): Promise<boolean> {
  const { redis } = index;
  const all = targetShards(index, at);
  const gen = at.generation ?? "";
  const pos = posArg(at);
  const tail: Arg[] = [meta.id, encodeMeta(meta), meta.keyId, keyArg(keyActive)];
  const total = change.add.length + change.remove.length;
  if (total === 0) {
    const res = await runAll(redis, all.map((s) => ({ name: "APPLY" as const, key: s.state, args: [s.base, gen, pos, ...tail, 0] })));
    return res.every((n) => Number(n) > 0);
  }
  const removes = index.groupByShard(change.remove);
  const adds = index.groupByShard(change.add);
  // Within a shard: removals before additions, slice after slice (a removal and a re-addition of one address stay
  // in that order); the shards are independent of each other. Only the shard's last slice records the position.
  const perShard = all.map(async (s) => {
    let wrote = true;
    const rem = removes[s.shard]!;
    const add = adds[s.shard]!;
    const slices: { part: [number, string][]; removal: boolean }[] = [];
    for (let i = 0; i < rem.length; i += SLICE) slices.push({ part: rem.slice(i, i + SLICE), removal: true });
    for (let i = 0; i < add.length; i += SLICE) slices.push({ part: add.slice(i, i + SLICE), removal: false });
    for (const [k, { part, removal }] of slices.entries()) {
      const args: Arg[] = [s.base, gen, k === slices.length - 1 ? pos : "", ...tail, removal ? part.length : 0];
      for (const [bucket, a] of part) args.push(bucket, a);
      wrote = Number(await run(redis, "APPLY", s.state, args)) > 0 && wrote;
    }
    return wrote;
  });
  return (await Promise.all(perShard)).every(Boolean);
}

export interface LoadedSubscription {
  meta: SubscriptionMeta;
  /** The key's state on this chain; undefined leaves what the generation has. */
  keyActive: boolean | undefined;
  addresses: readonly string[];
}

/**
 * The rebuild's bulk write: whole subscriptions into the generation being built, one script per shard for the whole
 * batch, sent as one round trip per node. Same effect as applyAddresses with that generation for each subscription.
 * Nothing else writes that generation meanwhile (README.md "Rebuild"). Keep a batch to a few tens of thousands of
 * addresses: each shard's part is one atomic script.
 */
export async function loadSubscriptions(index: WatchIndexHandle, generation: string, subs: readonly LoadedSubscription[]): Promise<void> {
  const args: Arg[][] = index.all.map((s) => [s.base, generation, 0]);
  for (const sub of subs) {
    const groups = index.groupByShard(sub.addresses);
    const head = [sub.meta.id, encodeMeta(sub.meta), sub.meta.keyId, keyArg(sub.keyActive)];
    groups.forEach((group, shard) => {
      if (group.length === 0) return;
      const a = args[shard]!;
      a[2] = Number(a[2]) + 1;
      a.push(...head, group.length);
      for (const [bucket, address] of group) a.push(bucket, address);
    });
  }
  const calls: ScriptCall[] = [];
  index.all.forEach((s, i) => {
    if (Number(args[i]![2]) > 0) calls.push({ name: "LOAD", key: s.state, args: args[i]! });
  });
  await runAll(index.redis, calls);
}

/** The same script on every shard of a chain; true when every shard has a generation to write to. */
async function everyShard(index: WatchIndexHandle, at: WriteAt, name: ScriptName, args: Arg[]): Promise<boolean> {
  const calls = targetShards(index, at).map((s) => ({ name, key: s.state, args: [s.base, at.generation ?? "", posArg(at), ...args] }));
  const res = await runAll(index.redis, calls);
  return res.every((n) => Number(n) > 0);
}

/** Refreshes a subscription's status, kinds and match conditions on one chain (no-op where it watches nothing). */
export async function setSubscriptionMeta(index: WatchIndexHandle, meta: SubscriptionMeta, at: WriteAt = {}): Promise<boolean> {
  return everyShard(index, at, "SET_META", [meta.id, encodeMeta(meta)]);
}

/** Takes a subscription out of matching at once; its address fields are cleaned by sweepDeadHandles. */
export async function dropSubscription(index: WatchIndexHandle, subscriptionId: string, at: WriteAt = {}): Promise<boolean> {
  return everyShard(index, at, "DROP_SUB", [subscriptionId]);
}

/** A key's state on one chain: live and the chain enabled on it ("1"), or revoked / chain off ("0"). */
export async function setKeyState(index: WatchIndexHandle, keyId: string, active: boolean, at: WriteAt = {}): Promise<boolean> {
  return everyShard(index, at, "SET_KEY", [keyId, active ? "1" : "0"]);
}

/** Raises the position of these shards (those with a generation) to `at.position` without writing a change. */
export async function raisePositions(index: WatchIndexHandle, at: WriteAt & { position: number }): Promise<boolean> {
  return everyShard(index, at, "SET_POS", []);
}
