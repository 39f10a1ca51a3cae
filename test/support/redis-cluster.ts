// A real Redis Cluster for tests: `masters` redis-server processes started with --cluster-enabled yes in a temp
// dir on free loopback ports (each also needs its bus port, +10000), joined with `redis-cli --cluster create`, and
// waited for until every node says cluster_state:ok. No persistence (like the shared test Redis): a node killed
// and started again comes back empty, as a restarted Redis without persistence does in production. Tests reach it
// through REDIS_URL=redis+cluster://… (common/redis.ts).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { IORedis, openRedis, type Redis } from "../../common/redis.ts";
import { allocateRedisDb } from "./redis.ts";
import { until } from "./wait.ts";

export interface RedisClusterNode {
  port: number;
  process: Subprocess;
}

export interface TestRedisCluster {
  /** redis+cluster://127.0.0.1:p1,127.0.0.1:p2,… */
  url: string;
  nodes: RedisClusterNode[];
  /** SIGKILLs the node on `port` and starts it again on the same port and node id (its data is gone). */
  restart(port: number, downMs?: number): Promise<void>;
  /** Deletes every key on every master (FLUSHDB reaches one node only). */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/** Ports p whose bus port p+10000 is free too. */
function clusterPorts(n: number): number[] {
  const out: number[] = [];
  for (let tries = 0; out.length < n && tries < 200; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if (out.includes(port)) continue;
    try {
      const a = Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } });
      const b = Bun.listen({ hostname: "127.0.0.1", port: port + 10_000, socket: { data() {} } });
      a.stop(true);
      b.stop(true);
      out.push(port);
    } catch {
      // taken: try another
    }
  }
  if (out.length < n) throw new Error("no free port pairs for a Redis Cluster");
  return out;
}

function startNode(dir: string, port: number): Subprocess {
  return Bun.spawn(
    [
      "redis-server",
      "--port", String(port),
      "--bind", "127.0.0.1",
      "--cluster-enabled", "yes",
      "--cluster-config-file", join(dir, `nodes-${port}.conf`),
      "--cluster-node-timeout", "2000",
      // A test cluster with no replicas: keep serving the slots that are up while one node restarts.
      "--cluster-require-full-coverage", "no",
      "--save", "",
      "--appendonly", "no",
      "--dir", dir,
      "--logfile", join(dir, `redis-${port}.log`),
    ],
    { stdout: "ignore", stderr: "ignore" },
  );
}

async function ping(port: number): Promise<boolean> {
  const c = new IORedis({ host: "127.0.0.1", port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  c.on("error", () => {});
  try {
    await c.connect();
    return (await c.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    c.disconnect();
  }
}

async function clusterOk(port: number): Promise<boolean> {
  const c = new IORedis({ host: "127.0.0.1", port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  c.on("error", () => {});
  try {
    await c.connect();
    const info = (await c.call("CLUSTER", "INFO")) as string;
    return info.includes("cluster_state:ok") && /cluster_known_nodes:(\d+)/.exec(info)?.[1] !== "1";
  } catch {
    return false;
  } finally {
    c.disconnect();
  }
}

export async function startRedisCluster(masters = 3): Promise<TestRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), "redis-cluster-"));
  const ports = clusterPorts(masters);
  const nodes: RedisClusterNode[] = ports.map((port) => ({ port, process: startNode(dir, port) }));
  const stop = async () => {
    for (const n of nodes) n.process.kill("SIGKILL");
    await Promise.all(nodes.map((n) => n.process.exited));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const n of nodes) await until(`redis-server on ${n.port}`, () => ping(n.port), 10_000, 20);
    const create = Bun.spawn(
      ["redis-cli", "--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "0", "--cluster-yes"],
      { stdout: "pipe", stderr: "pipe" },
    );
    if ((await create.exited) !== 0) {
      throw new Error(`redis-cli --cluster create failed: ${await new Response(create.stdout).text()}${await new Response(create.stderr).text()}`);
    }
    for (const n of nodes) await until(`cluster_state:ok on ${n.port}`, () => clusterOk(n.port), 20_000, 50);
  } catch (err) {
    await stop();
    throw err;
  }
  const eachMaster = async <T>(fn: (c: IORedis) => Promise<T>): Promise<T[]> =>
    Promise.all(
      nodes.map(async (n) => {
        const c = new IORedis({ host: "127.0.0.1", port: n.port, maxRetriesPerRequest: 1 });
        try {
          return await fn(c);
        } finally {
          c.disconnect();
        }
      }),
    );
  return {
    url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(",")}`,
    nodes,
    async restart(port, downMs = 0) {
      const node = nodes.find((n) => n.port === port);
      if (!node) throw new Error(`no cluster node on ${port}`);
      node.process.kill("SIGKILL");
      await node.process.exited;
      if (downMs > 0) await Bun.sleep(downMs);
      // The nodes-<port>.conf file keeps its id and slots, so it rejoins as the same master, empty.
      node.process = startNode(dir, port);
      await until(`redis-server on ${port} again`, () => ping(port), 10_000, 20);
      await until(`cluster_state:ok on ${port} again`, () => clusterOk(port), 20_000, 50);
    },
    async flush() {
      await eachMaster((c) => c.flushdb());
    },
    stop,
  };
}

/** Deletes every key the client can reach: FLUSHDB on one server, on every master of a cluster. */
export async function flushAll(redis: Redis): Promise<void> {
  if ("nodes" in redis && typeof redis.nodes === "function") {
    await Promise.all(redis.nodes("master").map((n) => n.flushdb()));
  } else {
    await (redis as IORedis).flushdb();
  }
}

export { openRedis };

/** The Redis deployments the parametrized suites run against: one server (a leased DB) and a 3-master cluster. */
export const REDIS_KINDS = ["server", "cluster"] as const;
export type RedisKind = (typeof REDIS_KINDS)[number];

export interface TestRedisTarget {
  kind: RedisKind;
  /** REDIS_URL for services under test. */
  url: string;
  /** The leased DB number of the shared server; 0 on a cluster (which has only DB 0). */
  db: number;
  /** A client opened the way the services open theirs (common/redis.ts). */
  redis: Redis;
  /** Present for a cluster: restart one of its nodes. */
  cluster: TestRedisCluster | undefined;
  /** Deletes every key of this target. */
  flush(): Promise<void>;
  release(): Promise<void>;
}

export async function openTestRedis(kind: RedisKind): Promise<TestRedisTarget> {
  if (kind === "server") {
    const lease = await allocateRedisDb();
    const redis = openRedis(lease.url);
    return {
      kind,
      url: lease.url,
      db: lease.db,
      redis,
      cluster: undefined,
      flush: async () => void (await (redis as IORedis).flushdb()),
      release: async () => {
        redis.disconnect();
        await lease.release();
      },
    };
  }
  const cluster = await startRedisCluster(3);
  const redis = openRedis(cluster.url);
  return {
    kind,
    url: cluster.url,
    db: 0,
    redis,
    cluster,
    flush: () => cluster.flush(),
    release: async () => {
      redis.disconnect();
      await cluster.stop();
    },
  };
}

/** KEYS on every master (KEYS on a cluster client reaches one node only): for tests and diagnostics, never hot paths. */
export async function keysEverywhere(redis: Redis, pattern: string): Promise<string[]> {
  if ("nodes" in redis && typeof redis.nodes === "function") {
    return (await Promise.all(redis.nodes("master").map((n) => n.keys(pattern)))).flat();
  }
  return (redis as IORedis).keys(pattern);
}

/** A private redis-server (no persistence) on a free port, for a benchmark that needs a server to itself. */
export async function startPrivateRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "redis-private-"));
  const [port] = clusterPorts(1);
  const proc = Bun.spawn(
    ["redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--logfile", join(dir, "redis.log")],
    { stdout: "ignore", stderr: "ignore" },
  );
  const stop = async () => {
    proc.kill("SIGKILL");
    await proc.exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until(`redis-server on ${port}`, () => ping(port!), 10_000, 20);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: `redis://127.0.0.1:${port}`, stop };
}
