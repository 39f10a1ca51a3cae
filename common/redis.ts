// Redis clients. Keys carry a prefix (REDIS_PREFIX) so deployments and test runs never collide; tests also pick
// their own DB number through REDIS_URL (redis://127.0.0.1:6379/7).
//
// REDIS_URL names either one server (redis:// or rediss://, as ioredis reads it) or a Redis Cluster:
// `redis+cluster://[user:password@]host:port,host:port,...` (any reachable masters; ioredis discovers the rest
// from CLUSTER SLOTS). `rediss+cluster://` does the same over TLS. Every key the services use carries a hash tag
// so each Lua script and each MULTI touches one slot; commands that span slots go through `acrossSlots`, which
// sends them as one pipeline per node.
import IORedis, { Cluster, type ChainableCommander, type ClusterOptions, type RedisOptions } from "ioredis";
import { log } from "./logger.ts";
import { reportRedisUnreachable } from "./reachability.ts";

/** A client of one Redis server or of a Redis Cluster: every service accepts either. */
export type Redis = IORedis | Cluster;
export { IORedis, Cluster };

export interface ClusterUrl {
  nodes: { host: string; port: number }[];
  username?: string;
  password?: string;
  tls: boolean;
}

/** The seed nodes and credentials of a `redis+cluster://` URL, or null when the URL names one server. */
export function parseClusterUrl(url: string): ClusterUrl | null {
  const m = /^(rediss?)\+cluster:\/\/(?:([^@/]*)@)?([^/?#]+)\/?$/.exec(url.trim());
  if (!m) {
    if (/^rediss?\+cluster:/.test(url.trim())) throw new Error(`REDIS_URL: cannot read the cluster URL "${url}" (redis+cluster://host:port,host:port)`);
    return null;
  }
  const [, scheme, auth, hosts] = m;
  const nodes = hosts!.split(",").map((part) => {
    const hp = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(part.trim());
    if (!hp) throw new Error(`REDIS_URL: "${part}" is not host:port`);
    return { host: hp[1]!.replace(/^\[|\]$/g, ""), port: Number(hp[2]) };
  });
  let username: string | undefined;
  let password: string | undefined;
  if (auth) {
    const at = auth.indexOf(":");
    username = decodeURIComponent(at < 0 ? auth : auth.slice(0, at)) || undefined;
    password = at < 0 ? undefined : decodeURIComponent(auth.slice(at + 1));
  }
  return { nodes, username, password, tls: scheme === "rediss" };
}

export function isCluster(redis: Redis): redis is Cluster {
  return (redis as { isCluster?: boolean }).isCluster === true;
}

const COMMON: RedisOptions = {
  // Fail fast while Redis is down so Redis-only checks can fail open instead of queueing forever.
  maxRetriesPerRequest: 1,
  enableOfflineQueue: true,
  connectTimeout: 2_000,
  lazyConnect: false,
};

/** `overrides` for a client with special needs (e.g. auto-pipelining for the gateway's rate limiter). */
export function openRedis(url: string, overrides: RedisOptions = {}): Redis {
  const cluster = parseClusterUrl(url);
  let client: Redis;
  if (cluster) {
    const { enableAutoPipelining, ...nodeOverrides } = overrides;
    const opts: ClusterOptions = {
      // Commands of one event-loop turn go out as one pipeline per node: a block lookup over many shards and the
      // schedule's per-shard calls cost one round trip per node.
      enableAutoPipelining: enableAutoPipelining ?? true,
      enableOfflineQueue: true,
      clusterRetryStrategy: (times) => Math.min(times * 100, 1_000),
      // A failover moves slots: ask the cluster again rather than fail the command at once.
      retryDelayOnFailover: 100,
      retryDelayOnClusterDown: 200,
      retryDelayOnTryAgain: 100,
      slotsRefreshTimeout: 2_000,
      redisOptions: {
        ...COMMON,
        ...nodeOverrides,
        username: cluster.username,
        password: cluster.password,
        ...(cluster.tls ? { tls: {} } : {}),
      },
    };
    client = new Cluster(cluster.nodes, opts);
  } else {
    client = new IORedis(url, {
      ...COMMON,
      retryStrategy: (times) => Math.min(times * 100, 1_000),
      ...overrides,
    });
  }
  // Without a listener ioredis prints every reconnect failure with its stack; this says it once a minute instead.
  client.on("error", (err) => reportRedisUnreachable(url, err, log));
  return client;
}

type Reply = [Error | null, unknown];

/**
 * A pipeline whose commands may name keys of different slots. On one server it is `redis.pipeline()`; on a
 * Cluster (where one ioredis pipeline must stay on one node) each command is sent on its own and the client's
 * auto-pipelining groups those of one event-loop turn per node, so it still costs one round trip per node.
 * `exec` answers like a pipeline's: one [error, value] per command, in order.
 */
export function acrossSlots(redis: Redis): ChainableCommander {
  if (!isCluster(redis)) return redis.pipeline();
  const calls: [string, unknown[]][] = [];
  const proxy: ChainableCommander = new Proxy({} as ChainableCommander, {
    get(_target, prop) {
      if (prop === "exec") {
        return async (): Promise<Reply[]> =>
          Promise.all(
            calls.map(([name, args]) => {
              const fn = (redis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[name];
              if (typeof fn !== "function") return Promise.resolve<Reply>([new Error(`unknown command ${name}`), null]);
              return fn.apply(redis, args).then(
                (v): Reply => [null, v],
                (e: Error): Reply => [e, null],
              );
            }),
          );
      }
      if (prop === "length") return calls.length;
      if (prop === "then") return undefined; // not a thenable
      return (...args: unknown[]) => {
        calls.push([String(prop), args]);
        return proxy;
      };
    },
  });
  return proxy;
}
