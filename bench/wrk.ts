// wrk (Debian's /usr/bin/wrk) as the benches' HTTP load tool: a phase is a URL and a Lua script, run for a number of
// seconds over a fixed number of connections (a closed loop), with the CPU it cost this process (the stack), the
// run's PostgreSQL backends and wrk itself. wrk is C: its CPU per request is a fraction of a JavaScript client's,
// which on a 2-core machine competes with the measured server for the same cores.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cpuBetween, cpuSample } from "./cpu.ts";

export interface WrkPhase {
  url: string;
  /**
   * A Lua script for wrk (method, headers, bodies). No `response` callback: with one, wrk hands every body to Lua,
   * which cost wrk more CPU than the server's work on the 25 KB list pages (wrk then competes for the same cores).
   */
  lua: string;
  /** Checked on one request before the phase (the same method, headers and body as wrk's first request). */
  expectStatus: number;
  probe: () => Promise<Response>;
}

/**
 * Where a phase's CPU went, in seconds: this process (gateway, registry and deliverer), the PostgreSQL backends
 * serving the run's database, and wrk. Redis is shared with the rest of the machine, so it is not counted here.
 */
export interface CpuSplit {
  stack: number;
  postgres: number;
  wrk: number;
}

export interface WrkResult {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** Responses that were not 2xx (wrk's count; the exact status is checked once before the phase, see expectStatus). */
  errors: number;
  socketErrors: string;
  cpu: CpuSplit;
}

export interface WrkOptions {
  threads: number;
  connections: number;
  /** The PostgreSQL backends whose CPU a phase counts (those serving the run's database). */
  postgresPids: () => Promise<number[]>;
}

export const luaString = (s: string) => JSON.stringify(s); // a JSON string literal is a valid Lua string literal here

/** A GET with an Authorization header. */
export function getPhase(url: string, authorization: string): WrkPhase {
  return {
    url,
    expectStatus: 200,
    probe: () => fetch(url, { headers: { authorization } }),
    lua: `wrk.method = "GET"\nwrk.headers["authorization"] = ${luaString(authorization)}`,
  };
}

function toMs(value: string, unit: string): number {
  const n = Number(value);
  return unit === "us" ? n / 1000 : unit === "s" ? n * 1000 : unit === "m" ? n * 60_000 : n;
}

export class Wrk {
  /** Where the phases' Lua scripts are written, made on the first run. */
  private scriptDir: string | undefined;

  constructor(private readonly options: WrkOptions) {}

  /** `wrk -tT -cC -dS --latency` on the phase: one run, measured. */
  async run(phase: WrkPhase, seconds: number): Promise<WrkResult> {
    const probe = await phase.probe();
    if (probe.status !== phase.expectStatus) throw new Error(`${phase.url} answered ${probe.status}: ${await probe.text()}`);
    this.scriptDir ??= mkdtempSync(join(tmpdir(), "bench-wrk-"));
    const file = join(this.scriptDir, `phase-${Math.random().toString(36).slice(2)}.lua`);
    writeFileSync(file, phase.lua);
    const { threads, connections } = this.options;
    const before = cpuSample(await this.options.postgresPids());
    const proc = Bun.spawn(
      ["wrk", `-t${threads}`, `-c${connections}`, `-d${seconds}s`, "--latency", "--timeout", "10s", "-s", file, phase.url],
      { stdout: "pipe", stderr: "pipe" },
    );
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    if ((await proc.exited) !== 0) throw new Error(`wrk failed: ${err || out}`);
    const after = cpuSample(await this.options.postgresPids());
    const wrkUsage = proc.resourceUsage();
    const cpu: CpuSplit = {
      ...cpuBetween(before, after),
      wrk: wrkUsage ? Number(wrkUsage.cpuTime.user + wrkUsage.cpuTime.system) / 1e6 : NaN,
    };
    const num = (re: RegExp) => {
      const m = re.exec(out);
      if (!m) throw new Error(`unexpected wrk output (${re}):\n${out}`);
      return m;
    };
    const p50 = num(/^\s+50%\s+([\d.]+)(us|ms|s|m)\s*$/m);
    const p99 = num(/^\s+99%\s+([\d.]+)(us|ms|s|m)\s*$/m);
    return {
      rps: Number(num(/Requests\/sec:\s+([\d.]+)/)[1]),
      p50Ms: toMs(p50[1]!, p50[2]!),
      p99Ms: toMs(p99[1]!, p99[2]!),
      requests: Number(num(/(\d+) requests in/)[1]),
      errors: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
      socketErrors: /Socket errors:.*$/m.exec(out)?.[0] ?? "",
      cpu,
    };
  }

  /** A warm-up run (discarded: connections opened, statements prepared and planned) then the measured one. */
  async measure(phase: WrkPhase, seconds: number, warmupSeconds: number): Promise<WrkResult> {
    await this.run(phase, warmupSeconds);
    return this.run(phase, seconds);
  }

  close(): void {
    if (this.scriptDir) rmSync(this.scriptDir, { recursive: true, force: true });
    this.scriptDir = undefined;
  }
}
