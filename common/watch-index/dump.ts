// Every entry of a chain's served generation, for tests and diagnostics (never on a request's path).
import { isCluster, type Redis } from "../redis.ts";
import { readShardStates } from "./generations.ts";
import { decodeMeta, type Watcher, type WatchIndexHandle } from "./layout.ts";

/** The clients that together hold every key: each master of a cluster, or the one server. */
function keyHolders(redis: Redis): Redis[] {
  return isCluster(redis) ? redis.nodes("master") : [redis];
}

const globEscape = (text: string) => text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/**
 * Every entry of the served generation of a chain; null when a shard is not ready. SCANs each node for the chain's
 * bucket keys instead of asking for all TOTAL_BUCKETS of them, so a small index is dumped quickly.
 */
export async function dumpChain(index: WatchIndexHandle): Promise<Map<string, Watcher[]> | null> {
  const { redis, prefix, chainId, shards, all } = index;
  const rows = await readShardStates(index);
  if (rows.some(([cur, , stale]) => !cur || stale)) return null;
  const served = new Set(all.map((s) => `${s.base}${rows[s.shard]![0]}:b:`));
  const metas = await Promise.all(all.map((s) => redis.hgetall(`${s.base}${rows[s.shard]![0]}:meta`)));
  const keyStates = await Promise.all(all.map((s) => redis.hgetall(`${s.base}${rows[s.shard]![0]}:keys`)));
  const pattern = `${globEscape(prefix)}wi:{${globEscape(chainId)}:*/${shards}}:*:b:*`;
  const out = new Map<string, Watcher[]>();
  for (const node of keyHolders(redis)) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1_000);
      cursor = next;
      for (const key of keys) {
        const cut = key.lastIndexOf(":b:") + 3;
        if (!served.has(key.slice(0, cut))) continue;
        const shard = all.findIndex((s) => key.startsWith(s.base));
        const fields = await redis.hgetall(key);
        for (const [address, value] of Object.entries(fields)) {
          const list = out.get(address) ?? [];
          for (const h of value.split(",")) {
            const m = metas[shard]![h];
            if (!m) continue;
            const meta = decodeMeta(m);
            const active = meta.enabled && keyStates[shard]![meta.keyId] === "1";
            list.push({ subscriptionId: meta.subscriptionId, keyId: meta.keyId, active, events: meta.events, match: meta.match });
          }
          if (list.length > 0) out.set(address, list);
        }
      }
    } while (cursor !== "0");
  }
  return out;
}
