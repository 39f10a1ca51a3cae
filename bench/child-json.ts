// A bench's worker in a process of its own (the StreamEvents consumer): started with its spec as JSON in
// its one argument, it prints progress as it likes and its result as JSON on its last line of stdout.
import { join } from "node:path";

/** Runs `script` (a file of bench/) with `spec` and returns the JSON its last stdout line holds. */
export async function runJsonChild<T>(script: string, spec: unknown): Promise<T> {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, script), JSON.stringify(spec)], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(child.stdout).text();
  if ((await child.exited) !== 0) throw new Error(`${script} failed: ${out}`);
  return JSON.parse(out.trim().split("\n").at(-1)!) as T;
}
