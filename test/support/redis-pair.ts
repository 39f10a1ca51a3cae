// A Redis primary and its replica of a test's own (redis-server processes in a temp dir on free loopback ports, no
// persistence), for tests that fail over: the machine's shared Redis is never touched. The replica follows the
// primary through a TCP proxy (tcp-proxy.ts), so a test can make it lag behind on purpose (lagReplica: replication
// bytes stop flowing) before promoting it, as an asynchronous replica that missed the last writes does.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { IORedis } from "../../common/redis.ts";
import { freePorts } from "./ports.ts";
import { startTcpProxy, type TcpProxy } from "./tcp-proxy.ts";
import { until } from "./wait.ts";

export interface RedisPair {
  primaryPort: number;
  replicaPort: number;
  /** The replication link stops carrying bytes: writes to the primary from now on never reach the replica. */
  lagReplica(): void;
  /** Promotes the replica (REPLICAOF NO ONE) and SIGKILLs the primary; resolves once the replica is a master. */
  failover(): Promise<void>;
  stop(): Promise<void>;
}

function startServer(dir: string, port: number, extra: string[] = []): Subprocess {
  return Bun.spawn(
    ["redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
      "--logfile", join(dir, `redis-${port}.log`), ...extra],
    { stdout: "ignore", stderr: "ignore" },
  );
}

async function command<T>(port: number, fn: (c: IORedis) => Promise<T>): Promise<T | undefined> {
  const c = new IORedis({ host: "127.0.0.1", port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  c.on("error", () => {});
  try {
    await c.connect();
    return await fn(c);
  } catch {
    return undefined;
  } finally {
    c.disconnect();
  }
}

const role = (port: number) => command(port, async (c) => String(((await c.role()) as unknown[])[0]));

export async function startRedisPair(): Promise<RedisPair> {
  const dir = mkdtempSync(join(tmpdir(), "redis-pair-"));
  const [primaryPort, replicaPort] = freePorts(2) as [number, number];
  const processes: Subprocess[] = [];
  let link: TcpProxy | undefined;
  const stop = async () => {
    for (const p of processes) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
    await Promise.all(processes.map((p) => p.exited));
    await link?.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const primary = startServer(dir, primaryPort);
    processes.push(primary);
    await until("the Redis primary answering", async () => (await role(primaryPort)) === "master", 20_000);
    link = await startTcpProxy({ hostname: "127.0.0.1", port: primaryPort });
    processes.push(startServer(dir, replicaPort, ["--replicaof", "127.0.0.1", String(link.port)]));
    await until(
      "the replica in sync",
      async () => (await command(replicaPort, async (c) => /master_link_status:up/.test(await c.info("replication")))) === true,
      20_000,
    );
    const proxy = link;
    return {
      primaryPort,
      replicaPort,
      lagReplica: () => proxy.freeze(),
      async failover() {
        await command(replicaPort, (c) => c.call("REPLICAOF", "NO", "ONE"));
        primary.kill("SIGKILL");
        await primary.exited;
        await until("the replica promoted", async () => (await role(replicaPort)) === "master", 20_000);
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
