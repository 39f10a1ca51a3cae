// The watch index must never lose a key on its own: an evicted bucket silently stops matching its addresses (the
// index keys carry no TTL, and nothing reads them often enough to notice). So a service that writes or reads it
// refuses a Redis whose maxmemory-policy may evict (anything but noeviction), on every master of a cluster. Read
// through INFO (not CONFIG GET, which managed Redis services often rename or forbid).
import type { Logger } from "./logger.ts";
import { isCluster, type Redis } from "./redis.ts";
import { withTimeout } from "./timing.ts";

export class EvictingRedisError extends Error {
  constructor(readonly policies: { node: string; policy: string }[]) {
    super(
      `Redis may evict keys (maxmemory-policy ${policies.map((p) => `${p.policy} on ${p.node}`).join(", ")}): the watch index ` +
        "would silently lose watched addresses. Set maxmemory-policy to noeviction on every Redis master " +
        "(CONFIG SET maxmemory-policy noeviction, or the managed service's parameter group) and give it the memory it needs.",
    );
    this.name = "EvictingRedisError";
  }
}

/** The maxmemory_policy line of INFO memory. */
export function policyOf(info: string): string | null {
  return /^maxmemory_policy:(\S+)/m.exec(info)?.[1] ?? null;
}

async function nodesOf(redis: Redis, timeoutMs: number): Promise<{ name: string; client: Pick<Redis, "info"> }[]> {
  if (!isCluster(redis)) return [{ name: `${redis.options.host}:${redis.options.port}`, client: redis }];
  if (redis.status !== "ready") {
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error("the Redis cluster did not become ready")), timeoutMs);
      redis.once("ready", () => (clearTimeout(t), resolve()));
    });
  }
  return redis.nodes("master").map((n) => ({ name: `${n.options.host}:${n.options.port}`, client: n }));
}

/** Throws EvictingRedisError when any master's policy may evict. Other failures (Redis down) are thrown as they are. */
export async function assertNoEviction(redis: Redis, timeoutMs = 3_000): Promise<void> {
  const check = async () => {
    const nodes = await nodesOf(redis, timeoutMs);
    const infos = await Promise.all(nodes.map((n) => n.client.info("memory")));
    const bad: { node: string; policy: string }[] = [];
    infos.forEach((info, i) => {
      const policy = policyOf(info);
      if (policy !== null && policy !== "noeviction") bad.push({ node: nodes[i]!.name, policy });
    });
    if (bad.length > 0) throw new EvictingRedisError(bad);
  };
  await withTimeout(check(), timeoutMs, () => new Error(`Redis did not answer INFO within ${timeoutMs} ms`));
}

/**
 * At a service's start: refuses (throws) an evicting Redis. A Redis not reachable now is checked when it answers, and
 * an evicting one is then reported as an error each time it is reached (the service is running by then).
 */
export async function refuseEvictingRedis(redis: Redis, log: Logger): Promise<void> {
  try {
    await assertNoEviction(redis);
    return;
  } catch (err) {
    if (err instanceof EvictingRedisError) throw err;
    log.warn("could not read Redis' maxmemory-policy at start; it is checked when Redis answers", { err });
  }
  redis.on("ready", () => {
    assertNoEviction(redis).catch((err) => {
      if (err instanceof EvictingRedisError) log.error(err.message);
    });
  });
}
