// CPU time of the processes a benchmark phase kept busy, read from /proc: on a shared 2-core machine a phase's
// throughput moves with everyone else's work, the CPU it cost per request much less.
import { readFileSync } from "node:fs";

/** CPU seconds (user + system) in a /proc `stat` file of a process or a thread (Linux; NaN elsewhere). */
export function statCpuSeconds(path: string): number {
  try {
    // readFileSync: Bun.file(…).text() on a /proc file (reported size 0) was slow enough to show in a profile.
    const stat = readFileSync(path, "utf8");
    // Fields after the parenthesised name: utime and stime are the 12th and 13th, in clock ticks (USER_HZ = 100).
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}

/** CPU seconds (user + system) of a process. */
export function procCpuSeconds(pid: number): number {
  return statCpuSeconds(`/proc/${pid}/stat`);
}

/** CPU seconds of this process (the stack, when it runs in-process) and of each PostgreSQL backend, by pid. */
export interface CpuSample {
  stack: number;
  postgres: Map<number, number>;
}

export function cpuSample(postgresPids: readonly number[]): CpuSample {
  const usage = process.cpuUsage();
  const postgres = new Map<number, number>();
  for (const pid of postgresPids) {
    const v = procCpuSeconds(pid);
    if (Number.isFinite(v)) postgres.set(pid, v);
  }
  return { stack: (usage.user + usage.system) / 1e6, postgres };
}

/**
 * CPU seconds spent between two samples, by this process and by the PostgreSQL backends; a backend that appeared in
 * between (the pool grew) counts whole, one that exited in between is not counted.
 */
export function cpuBetween(before: CpuSample, after: CpuSample): { stack: number; postgres: number } {
  let postgres = 0;
  for (const [pid, v] of after.postgres) postgres += v - (before.postgres.get(pid) ?? 0);
  return { stack: after.stack - before.stack, postgres };
}

/**
 * The allocator setting this process runs with, for a bench's first line: the services start Bun through
 * cli/run-bun.sh (MIMALLOC_PURGE_DELAY=-1), and a run without it costs far more CPU on large buffers (README
 * "Benchmarks", *Memory*), so every figure says which it had.
 */
export function allocatorNote(): string {
  const delay = process.env.MIMALLOC_PURGE_DELAY;
  return delay === undefined ? "allocator: Bun's default purging (not started through cli/run-bun.sh)" : `allocator: MIMALLOC_PURGE_DELAY=${delay}`;
}
