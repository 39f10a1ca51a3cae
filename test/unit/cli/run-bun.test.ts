// cli/run-bun.sh starts Bun with the allocator setting the services run with (README "Configuration",
// MIMALLOC_PURGE_DELAY): the npm scripts that run a service, the demo, the chaos run and the benchmarks go through it,
// and Bun's allocator really reads the value (its verbose start-up report names each option it took).
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "..", "..", "..");
const scripts: Record<string, string> = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts;

/**
 * mimalloc's purge_delay as Bun's allocator reports it when started by cli/run-bun.sh with `delay` in the environment
 * (and `bun` on PATH from node_modules/.bin, as npm scripts have it).
 */
function purgeDelay(delay: string | undefined): string | undefined {
  const { MIMALLOC_PURGE_DELAY: _, ...env } = process.env;
  const run = Bun.spawnSync(["sh", join(root, "cli", "run-bun.sh"), "-e", "0"], {
    env: { ...env, PATH: `${join(root, "node_modules", ".bin")}:${env.PATH ?? ""}`, MIMALLOC_VERBOSE: "1", ...(delay === undefined ? {} : { MIMALLOC_PURGE_DELAY: delay }) },
    stderr: "pipe",
    stdout: "pipe",
  });
  expect(run.exitCode).toBe(0);
  return /option 'purge_delay': (-?\d+)/.exec(run.stderr.toString() + run.stdout.toString())?.[1];
}

test("the scripts that run a service, the demo, the chaos run and the benchmarks start Bun through cli/run-bun.sh", () => {
  for (const name of ["start", "gateway", "registry", "deliverer", "matcher", "demo", "bench", "chaos"]) {
    expect({ name, script: scripts[name]?.startsWith("sh cli/run-bun.sh ") }).toEqual({ name, script: true });
  }
});

test("cli/run-bun.sh turns the allocator's purging off, and a value already set wins", () => {
  expect(purgeDelay(undefined)).toBe("-1");
  expect(purgeDelay("100")).toBe("100");
});
