// Redis clients. Keys carry a prefix (REDIS_PREFIX) so deployments and test runs never collide; tests also pick
// their own DB number through REDIS_URL (redis://127.0.0.1:6379/7).
//
// REDIS_URL names either one server (redis:// or rediss://, as ioredis reads it) or a Redis Cluster:
// `redis+cluster://[user:password@]host:port,host:port,...` (any reachable masters; ioredis discovers the rest
// from CLUSTER SLOTS). `rediss+cluster://` does the same over TLS. Every key the services use carries a hash tag
// so each Lua script touches one slot; commands that span slots go through `acrossSlots`, which sends them as one
// pipeline per node.
import calculateSlot from "cluster-key-slot";
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
    // No auto-pipelining on a cluster: an auto-pipeline that meets a moved slot (a failover, a restarted master)
    // fails its commands with MOVED instead of following it, and the slot map is not refreshed, so every later call
    // to that slot fails too. Multi-slot work goes through acrossSlots (one pipeline per node, redirections
    // followed); single commands follow redirections by themselves.
    const { enableAutoPipelining: _ignored, ...nodeOverrides } = overrides;
    const opts: ClusterOptions = {
      enableAutoPipelining: false,
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
    // One line per unreachable node (its own address), as for a single server.
    client.on("node error", (err: unknown, address: string) => reportRedisUnreachable(`redis://${address}`, err, log));
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

/** Replies that mean "not run here, try again" on a cluster: the command was not executed, so resending is safe. */
const REDIRECTED = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN|NOSCRIPT) /;

/** The first key of a command as our callers issue them: EVALSHA/EVAL sha numkeys key…, else the first argument. */
function firstKey(name: string, args: unknown[]): string {
  const key = name === "evalsha" || name === "eval" ? args[2] : args[0];
  return String(key);
}

/**
 * A pipeline whose commands may name keys of different slots. On one server it is `redis.pipeline()`. On a Cluster
 * (where one ioredis pipeline must stay on one node) the commands are grouped by the node serving each key's slot
 * and sent as one pipeline per node: one round trip per node. A command a node answers with a redirection (a slot
 * moved by a failover or a restart, MOVED/ASK/TRYAGAIN/CLUSTERDOWN) or NOSCRIPT (a node restarted empty) was not run
 * there, and is sent again on its own, which follows the redirection and refreshes the client's slot map.
 * `exec` answers like a pipeline's: one [error, value] per command, in order.
 */
export function acrossSlots(redis: Redis): ChainableCommander {
  if (!isCluster(redis)) return redis.pipeline();
  const calls: [string, unknown[]][] = [];
  const single = (name: string, args: unknown[]): Promise<Reply> => {
    const fn = (redis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[name];
    if (typeof fn !== "function") return Promise.resolve<Reply>([new Error(`unknown command ${name}`), null]);
    return fn.apply(redis, args).then(
      (v): Reply => [null, v],
      (e: Error): Reply => [e, null],
    );
  };
  const exec = async (): Promise<Reply[]> => {
    const out: Reply[] = new Array(calls.length);
    const groups = new Map<string, number[]>();
    calls.forEach(([name, args], i) => {
      const nodes = redis.slots[calculateSlot(firstKey(name, args))];
      const group = nodes ? nodes.join(",") : "?";
      let list = groups.get(group);
      if (!list) groups.set(group, (list = []));
      list.push(i);
    });
    await Promise.all(
      [...groups.values()].map(async (indices) => {
        if (indices.length === 1) {
          const i = indices[0]!;
          out[i] = await single(calls[i]![0], calls[i]![1]);
          return;
        }
        const pipe = redis.pipeline() as unknown as Record<string, (...a: unknown[]) => unknown> & ChainableCommander;
        for (const i of indices) pipe[calls[i]![0]]!(...calls[i]![1]);
        let replies: Reply[];
        try {
          replies = ((await pipe.exec()) ?? []) as Reply[];
        } catch (err) {
          // The slot map changed under the pipeline ("all keys … same slots allocation group"): one by one.
          replies = indices.map(() => [err as Error, null]);
        }
        await Promise.all(
          indices.map(async (i, j) => {
            const reply = replies[j] ?? [new Error("no reply"), null];
            const err = reply[0];
            out[i] = err && (REDIRECTED.test(err.message) || /slots allocation group|same slot/.test(err.message)) ? await single(calls[i]![0], calls[i]![1]) : reply;
          }),
        );
      }),
    );
    return out;
  };
  const proxy: ChainableCommander = new Proxy({} as ChainableCommander, {
    get(_target, prop) {
      if (prop === "exec") return exec;
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
