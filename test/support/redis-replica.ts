// A real Redis primary and its replica (`redis-server --replicaof`), this test's own on free loopback ports, no
// persistence: for failovers to a replica that lagged. cut() detaches the replica (REPLICAOF NO ONE), as a promotion
// of a replica that had not received the primary's last writes does; the test then points the services at it (a
// TCP proxy it repoints: test/support/tcp-proxy.ts).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import Redis from "ioredis";
import { freePorts } from "./ports.ts";
import { until } from "./wait.ts";

export interface RedisPair {
  primary: { port: number; client: Redis };
  replica: { port: number; client: Redis };
  /** Waits until the replica has every write the primary acknowledged so far. */
  synced(): Promise<void>;
  /** Detaches the replica: from now on it is a primary of its own, without the old primary's later writes. */
  cut(): Promise<void>;
  stop(): Promise<void>;
}

function spawnServer(dir: string, port: number, extra: string[]): Subprocess {
  return Bun.spawn(
    ["redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, ...extra],
    { stdout: "ignore", stderr: "ignore" },
  );
}

function client(port: number): Redis {
  const c = new Redis(port, "127.0.0.1", { maxRetriesPerRequest: 1 });
  c.on("error", () => {});
  return c;
}

export async function startRedisPair(): Promise<RedisPair> {
  const [p, r] = freePorts(2) as [number, number];
  const dir = mkdtempSync(join(tmpdir(), "redis-pair-"));
  const processes = [spawnServer(dir, p, ["--dbfilename", "p.rdb"]), spawnServer(dir, r, ["--dbfilename", "r.rdb", "--replicaof", "127.0.0.1", String(p)])];
  const primary = client(p);
  const replica = client(r);
  const stop = async () => {
    primary.disconnect();
    replica.disconnect();
    for (const proc of processes) if (proc.exitCode === null) proc.kill("SIGKILL");
    await Promise.all(processes.map((proc) => proc.exited));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until("the replica is linked to its primary", async () => {
      const info = await replica.info("replication").catch(() => "");
      return info.includes("master_link_status:up");
    }, 15_000, 50);
    return {
      primary: { port: p, client: primary },
      replica: { port: r, client: replica },
      async synced() {
        const acked = Number(await primary.call("WAIT", "1", "5000"));
        if (acked < 1) throw new Error("the replica did not acknowledge the primary's writes");
      },
      async cut() {
        await replica.call("REPLICAOF", "NO", "ONE");
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
