// CPU time of this process per thread kind, from /proc/self/task (Linux; elsewhere nothing): Bun's event loop
// ("bun") beside JavaScriptCore's JIT compiler, GC helpers and the allocator's scavenger, so a bench can tell the
// cost of its own code from the runtime's warm-up; and the CPU time of the services a phase drove (PostgreSQL, the
// brokers, Redis), from /proc, so it can tell theirs too.
import { readdirSync, readFileSync } from "node:fs";
import { statCpuSeconds } from "./cpu.ts";

/** Milliseconds of CPU (user + system) per thread name, digits at the end of a name dropped (one per kind). */
export function threadCpu(): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync("/proc/self/task");
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const name = readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim().replace(/\d+$/, "");
      const seconds = statCpuSeconds(`/proc/self/task/${tid}/stat`);
      if (Number.isFinite(seconds)) out.set(name, (out.get(name) ?? 0) + seconds * 1000);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

/** "bun 91 µs, JITWorker 38 µs, …" per operation between two readings, largest first; "" without /proc. */
export function threadCpuPer(before: Map<string, number>, after: Map<string, number>, n: number): string {
  return [...after]
    .map(([name, ms]) => [name, ms - (before.get(name) ?? 0)] as const)
    .filter(([, ms]) => ms > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([name, ms]) => `${name} ${Math.round((ms * 1000) / n)} µs`)
    .join(", ");
}

/**
 * Milliseconds of CPU (user + system) of the machine's other processes by name (`postgres` for every PostgreSQL
 * process), from /proc (Linux; elsewhere nothing): what a phase cost the services it drove, beside this process. A
 * process that started or ended between two readings counts only what one of them saw.
 */
export function serviceCpu(names: readonly string[] = ["postgres", "nats-server", "redis-server", "beam.smp"]): Map<string, number> {
  const out = new Map<string, number>();
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((p) => /^\d+$/.test(p));
  } catch {
    return out;
  }
  for (const pid of pids) {
    try {
      const name = readFileSync(`/proc/${pid}/comm`, "utf8").trim();
      let kind = names.find((n) => name === n || name.startsWith(`${n}:`));
      if (!kind) continue;
      if (kind === "postgres") kind = postgresRole(pid);
      const seconds = statCpuSeconds(`/proc/${pid}/stat`);
      if (Number.isFinite(seconds)) out.set(kind, (out.get(kind) ?? 0) + seconds * 1000);
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return out;
}

/** A PostgreSQL process by its title: "postgres" for a client's backend, else its role ("postgres autovacuum", …). */
function postgresRole(pid: string): string {
  const title = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  const role = /: (checkpointer|background writer|walwriter|autovacuum|logical replication)/.exec(title)?.[1];
  return role ? `postgres ${role}` : "postgres";
}
