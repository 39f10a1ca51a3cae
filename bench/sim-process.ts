// The simulator as its own process for the matcher benches (tools/tron-sim/main.ts): `args` after the script, the
// URL read from the line it prints once it listens.
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..");

export async function startSimProcess(args: string[], bunArgs: string[] = []): Promise<{ url: string; proc: ReturnType<typeof Bun.spawn> }> {
  const proc = Bun.spawn([join(ROOT, "node_modules/.bin/bun"), ...bunArgs, join(ROOT, "tools/tron-sim/main.ts"), ...args], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = proc.stdout.getReader();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error("tron-sim exited before listening");
    text += new TextDecoder().decode(value);
    const m = /"url":"([^"]+)"/.exec(text);
    if (m) {
      reader.releaseLock();
      return { url: m[1]!, proc };
    }
  }
}
