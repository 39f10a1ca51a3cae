// The index's key layout, in this one home, and the per-chain handle every part takes (README.md "Layout").
import { DEFAULT_WATCH_INDEX_SHARDS } from "../config.ts";
import type { Redis } from "../redis.ts";
import { decodeMatch, encodeMatch, type MatchConditions } from "../match-conditions.ts";

export const DEFAULT_SHARDS = DEFAULT_WATCH_INDEX_SHARDS;
/**
 * Buckets of a chain over all its shards: sized so that at 10,000,000 addresses a bucket holds ~76 (under Redis'
 * default hash-max-listpack-entries of 128, so every hash keeps the compact encoding; bench/index.ts measures it).
 */
export const TOTAL_BUCKETS = 131_072;
export const ACTIVE_EVENTS_SEPARATOR = ",";

export interface Watcher {
  subscriptionId: string;
  keyId: string;
  /** Subscription enabled and key live with this chain enabled. */
  active: boolean;
  /** Event kinds the subscription listens to. */
  events: string[];
  /**
   * The subscription's match conditions (matcher/conditions.ts applies them). Watchers of one subscription share
   * one object, as do all subscriptions with the same conditions: read it, never change it.
   */
  match: MatchConditions;
}

export interface SubscriptionMeta {
  id: string;
  keyId: string;
  enabled: boolean;
  events: readonly string[];
  /** Absent: the default conditions. */
  match?: MatchConditions;
}

export interface AddressChange {
  add: readonly string[];
  remove: readonly string[];
}

/** Key names; `prefix` is config.redisPrefix. The shard count is part of the tag, so a changed count is a new,
 * unbuilt index (lookups wait, the registry rebuilds) rather than a layout read the wrong way. */
export function shardBase(prefix: string, chainId: string, shard: number, shards = DEFAULT_SHARDS): string {
  return `${prefix}wi:{${chainId}:${shard}/${shards}}:`;
}

export function bucketsPerShard(shards = DEFAULT_SHARDS): number {
  return Math.ceil(TOTAL_BUCKETS / shards);
}

/** Where an address lives: its shard (hash tag) and its bucket within the shard. */
export function slotOf(address: string, shards = DEFAULT_SHARDS): { shard: number; bucket: number } {
  const h = Bun.hash.crc32(address);
  return { shard: h % shards, bucket: Math.floor(h / shards) % bucketsPerShard(shards) };
}

export function encodeMeta(meta: SubscriptionMeta): string {
  return `${meta.id}|${meta.keyId}|${meta.enabled ? "e" : "d"}|${meta.events.join(ACTIVE_EVENTS_SEPARATOR)}|${meta.match ? encodeMatch(meta.match) : ""}`;
}

// A meta written before match conditions existed has four fields: its match is the default.
export function decodeMeta(text: string): { subscriptionId: string; keyId: string; enabled: boolean; events: string[]; match: MatchConditions } {
  const [subscriptionId = "", keyId = "", status = "", events = "", match = ""] = text.split("|");
  return {
    subscriptionId,
    keyId,
    enabled: status === "e",
    events: events ? events.split(ACTIVE_EVENTS_SEPARATOR) : [],
    match: decodeMatch(match),
  };
}

/** One shard of a chain: its number, its key base (hash tag included) and its state key. */
export interface ShardKeys {
  shard: number;
  base: string;
  state: string;
}

export interface WatchIndexHandleOptions {
  /** config.redisPrefix. */
  prefix: string;
  chainId: string;
  /** WATCH_INDEX_SHARDS (config.watchIndexShards); omitted: DEFAULT_SHARDS. */
  shards?: number;
}

/** One chain's index on one Redis: what the writer, generations and reader functions take. */
export class WatchIndexHandle {
  readonly prefix: string;
  readonly chainId: string;
  readonly shards: number;
  /** Every shard of the chain, in order. */
  readonly all: readonly ShardKeys[];

  constructor(
    readonly redis: Redis,
    opts: WatchIndexHandleOptions,
  ) {
    this.prefix = opts.prefix;
    this.chainId = opts.chainId;
    this.shards = opts.shards ?? DEFAULT_SHARDS;
    this.all = Array.from({ length: this.shards }, (_, shard) => {
      const base = shardBase(this.prefix, this.chainId, shard, this.shards);
      return { shard, base, state: `${base}state` };
    });
  }

  /** Per shard, its addresses with their buckets. */
  groupByShard(addresses: readonly string[]): [number, string][][] {
    const out: [number, string][][] = Array.from({ length: this.shards }, () => []);
    for (const a of addresses) {
      const { shard, bucket } = slotOf(a, this.shards);
      out[shard]!.push([bucket, a]);
    }
    return out;
  }

  /** The shards a change touches: those of its addresses, or every shard for one without addresses. */
  shardsOfChange(change: AddressChange): number[] {
    if (change.add.length + change.remove.length === 0) return this.all.map((s) => s.shard);
    const out = new Set<number>();
    for (const a of change.add) out.add(slotOf(a, this.shards).shard);
    for (const a of change.remove) out.add(slotOf(a, this.shards).shard);
    return [...out].sort((a, b) => a - b);
  }
}

export function watchIndexHandle(redis: Redis, opts: WatchIndexHandleOptions): WatchIndexHandle {
  return new WatchIndexHandle(redis, opts);
}
