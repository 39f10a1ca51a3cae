// The watch index as PostgreSQL says it should be, and as Redis holds it, in one comparable form:
// chain → address → sorted "subscriptionId active events match" strings. Used by the watch-index tests.
import type { SQL } from "bun";
import { TRON_CHAINS } from "../../common/contract/index.ts";
import type { Redis } from "../../common/redis.ts";
import { encodeMatch, type MatchConditions } from "../../common/match-conditions.ts";
import { dumpChain } from "../../common/watch-index/dump.ts";
import { readState } from "../../common/watch-index/generations.ts";
import { watchIndexHandle, type Watcher } from "../../common/watch-index/layout.ts";

export type IndexView = Record<string, Record<string, string[]>>;

const describe = (id: string, active: boolean, events: readonly string[], match: MatchConditions) =>
  `${id} ${active ? "active" : "inactive"} ${events.join(",")} ${encodeMatch(match)}`;

function sortView(view: IndexView): IndexView {
  const out: IndexView = {};
  for (const chain of Object.keys(view).sort()) {
    out[chain] = {};
    for (const address of Object.keys(view[chain]!).sort()) out[chain]![address] = [...view[chain]![address]!].sort();
  }
  return out;
}

/** What the index must hold: every stored address entry with its subscription's matching state. */
export async function expectedIndex(sql: SQL): Promise<IndexView> {
  const rows = (await sql`
    SELECT a.chain_id, a.address, s.id, s.status, s.events, s.match, k.chains, k.revoked_at IS NOT NULL AS revoked
    FROM subscription_addresses a
    JOIN subscriptions s ON s.id = a.subscription_id
    JOIN api_keys k ON k.id = s.key_id`) as {
    chain_id: string;
    address: string;
    id: string;
    status: string;
    events: string[];
    match: MatchConditions | string;
    chains: string[];
    revoked: boolean;
  }[];
  const view: IndexView = Object.fromEntries(TRON_CHAINS.map((c) => [c, {}]));
  for (const r of rows) {
    const active = r.status === "enabled" && !r.revoked && r.chains.includes(r.chain_id);
    const match = typeof r.match === "string" ? (JSON.parse(r.match) as MatchConditions) : r.match;
    ((view[r.chain_id] ??= {})[r.address] ??= []).push(describe(r.id, active, r.events, match));
  }
  return sortView(view);
}

/** What Redis holds (the served generation of every chain); null when a chain is not ready. */
export async function actualIndex(redis: Redis, prefix: string): Promise<IndexView | null> {
  const view: IndexView = {};
  for (const chain of TRON_CHAINS) {
    const dump = await dumpChain(watchIndexHandle(redis, { prefix, chainId: chain }));
    if (!dump) return null;
    view[chain] = {};
    for (const [address, watchers] of dump) {
      view[chain]![address] = watchers.map((w: Watcher) => describe(w.subscriptionId, w.active, w.events, w.match));
    }
  }
  return sortView(view);
}

/** Waits (bounded) until every chain's index is served and not stale. */
export async function waitUntilReady(redis: Redis, prefix: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const states = await Promise.all(TRON_CHAINS.map((c) => readState(watchIndexHandle(redis, { prefix, chainId: c }))));
    if (states.every((s) => s.cur !== null && !s.stale)) return;
    if (Date.now() > deadline) throw new Error("the watch index did not become ready in time");
    await Bun.sleep(50);
  }
}
