// A PostgreSQL cluster of a test's own (initdb + pg_ctl in a temp dir, on a free port), for tests that restart or
// crash the database: the machine's shared server is never touched. Run as root, the server runs as the `postgres`
// user (PostgreSQL refuses root). stop() removes the data directory.
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePorts } from "./ports.ts";

const BIN = process.env.PG_BIN_DIR ?? "/usr/lib/postgresql/15/bin";

export interface PgCluster {
  port: number;
  /** The data directory (pg_ctl -D), for a run that keeps the cluster after it ends. */
  dataDir: string;
  /** postgres://postgres@127.0.0.1:<port>/<database> */
  url(database: string): string;
  /** Stops the server (`immediate`: a crash, recovered at the next start), waits `downMs`, starts it again. */
  restart(opts?: { mode?: "fast" | "immediate"; downMs?: number }): Promise<void>;
  stop(): Promise<void>;
}

function asServerUser(cmd: string[]): string[] {
  return process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...cmd] : cmd;
}

function idOf(flag: "-u" | "-g"): number {
  return Number(Bun.spawnSync(["id", flag, "postgres"]).stdout.toString().trim());
}

async function run(cmd: string[]): Promise<void> {
  const proc = Bun.spawn(asServerUser(cmd), { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`${cmd.slice(0, 2).join(" ")} exited ${code}: ${err || out}`);
}

export async function startPgCluster(opts: { maxConnections?: number } = {}): Promise<PgCluster> {
  const dir = mkdtempSync(join(tmpdir(), "pg-cluster-"));
  const data = join(dir, "data");
  if (process.getuid?.() === 0) chownSync(dir, idOf("-u"), idOf("-g"));
  const [port] = freePorts(1) as [number];
  const log = join(dir, "server.log");
  // A crash here is the server's, never the machine's: fsync off keeps a restart on a busy machine quick and loses
  // nothing, as the OS keeps what was written. synchronous_commit stays on: off, a crash loses commits already
  // reported (up to 200 ms of them), which no real server does.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=${opts.maxConnections ?? 300} -c fsync=off -c full_page_writes=off`;
  const ctl = (...args: string[]) => run([join(BIN, "pg_ctl"), "-D", data, "-l", log, "-w", "-t", "60", ...args]);
  let running = false;
  const start = async () => {
    await ctl("-o", options, "start");
    running = true;
  };
  try {
    await run([join(BIN, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
    await start();
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    port,
    dataDir: data,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    async restart({ mode = "immediate", downMs = 0 } = {}) {
      running = false;
      await ctl("-m", mode, "stop");
      if (downMs > 0) await Bun.sleep(downMs);
      await start();
    },
    async stop() {
      try {
        if (running) await ctl("-m", "immediate", "stop");
      } catch {
        // Already gone: the directory goes anyway.
      } finally {
        running = false;
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
