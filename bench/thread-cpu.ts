// CPU time of this process per thread kind, from /proc/self/task (Linux; elsewhere nothing): Bun's event loop
// ("bun") beside JavaScriptCore's JIT compiler, GC helpers and the allocator's scavenger, so a bench can tell the
// cost of its own code from the runtime's warm-up.
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
