// CPU time of this process per thread kind, from /proc/self/task (Linux; elsewhere nothing): Bun's event loop
// ("bun") beside JavaScriptCore's JIT compiler, GC helpers and the allocator's scavenger, so a bench can tell the
// cost of its own code from the runtime's warm-up.
import { readdirSync, readFileSync } from "node:fs";

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
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      // Fields after the parenthesised name: utime and stime are the 12th and 13th, in clock ticks (100 a second).
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.set(name, (out.get(name) ?? 0) + (Number(f[11]) + Number(f[12])) * 10);
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
