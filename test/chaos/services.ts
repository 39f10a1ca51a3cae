// The services of the fault run, each its own process (`bun <service>/main.ts`, as `bun run registry` etc. start
// them), under a supervisor that starts a process again a moment after it exits, as Kubernetes restarts a pod:
// the run SIGKILLs them at will. Each process's JSON log lines are kept with the time they arrived.
import { join } from "node:path";
import type { Subprocess } from "bun";

const ROOT = join(import.meta.dir, "..", "..");
const BUN = join(ROOT, "node_modules", ".bin", "bun");

export interface LogLine {
  service: string;
  at: number;
  record: Record<string, unknown>;
}

export interface ServiceSpec {
  name: string;
  /** The entry point, relative to the repository root (`registry/main.ts`). */
  entry: string;
  env: Record<string, string>;
  /** Its /healthz: the process is up when this answers 200. */
  healthUrl: string;
}

export interface Supervisor {
  /** Every JSON log line of every process so far. */
  logs: LogLine[];
  /** How many times each service was started. */
  starts: Map<string, number>;
  kill(name: string, signal?: "SIGKILL" | "SIGTERM"): void;
  /** Keep `name` down until resume(name) (its restarts wait). */
  hold(name: string): void;
  resume(name: string): void;
  running(name: string): boolean;
  /** Whether its process answers /healthz now. */
  healthy(name: string): Promise<boolean>;
  names(): string[];
  stop(): Promise<void>;
}

export function superviseServices(specs: ServiceSpec[], opts: { restartMs?: number; stderr?: boolean } = {}): Supervisor {
  const logs: LogLine[] = [];
  const starts = new Map<string, number>();
  const procs = new Map<string, Subprocess<"ignore", "pipe", "pipe" | "ignore">>();
  const held = new Set<string>();
  let stopping = false;
  const restartMs = opts.restartMs ?? 1_000;

  const read = async (name: string, stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    let pending = "";
    for await (const chunk of stream) {
      pending += decoder.decode(chunk, { stream: true });
      const parts = pending.split("\n");
      pending = parts.pop() ?? "";
      for (const line of parts) {
        if (!line.startsWith("{")) continue;
        try {
          logs.push({ service: name, at: Date.now(), record: JSON.parse(line) as Record<string, unknown> });
        } catch {
          // not a log record
        }
      }
    }
  };

  const start = (spec: ServiceSpec) => {
    if (stopping || held.has(spec.name) || procs.has(spec.name)) return;
    starts.set(spec.name, (starts.get(spec.name) ?? 0) + 1);
    const proc = Bun.spawn([BUN, join(ROOT, spec.entry)], {
      cwd: ROOT,
      env: { ...(process.env as Record<string, string>), ...spec.env },
      stdin: "ignore",
      stdout: "pipe",
      stderr: opts.stderr ? "pipe" : "ignore",
    });
    procs.set(spec.name, proc);
    void read(spec.name, proc.stdout);
    if (opts.stderr && proc.stderr instanceof ReadableStream) void read(spec.name, proc.stderr);
    void proc.exited.then(() => {
      if (procs.get(spec.name) !== proc) return;
      procs.delete(spec.name);
      setTimeout(() => start(spec), restartMs);
    });
  };
  for (const spec of specs) start(spec);
  const byName = new Map(specs.map((s) => [s.name, s]));

  return {
    logs,
    starts,
    kill(name, signal = "SIGKILL") {
      procs.get(name)?.kill(signal);
    },
    hold(name) {
      held.add(name);
    },
    resume(name) {
      held.delete(name);
      if (!procs.has(name)) start(byName.get(name)!);
    },
    running: (name) => procs.has(name),
    async healthy(name) {
      if (!procs.has(name)) return false;
      const res = await fetch(byName.get(name)!.healthUrl, { signal: AbortSignal.timeout(2_000) }).catch(() => null);
      return res?.ok === true;
    },
    names: () => specs.map((s) => s.name),
    async stop() {
      stopping = true;
      const all = [...procs.values()];
      for (const p of all) p.kill("SIGKILL");
      await Promise.all(all.map((p) => p.exited));
      procs.clear();
    },
  };
}
