// clients/typescript's generated files are committed; this proves they are exactly what `npm run generate` makes
// from the gateway's routes today, so an API change the client does not follow fails here (and in the type checks
// of the console, the demo and the tests that call through it).
import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dir, "..", "..", "..");
const client = join(root, "clients", "typescript");
const GENERATED = ["openapi.json", "src/schema.ts"];

test("clients/typescript matches what its generator writes from the gateway's OpenAPI document", () => {
  const work = mkdtempSync(join(tmpdir(), "client-fresh-"));
  try {
    const res = Bun.spawnSync([process.execPath, join(client, "scripts", "generate.ts"), work], { cwd: root });
    expect(res.stderr.toString()).toBe("");
    expect(res.exitCode).toBe(0);
    for (const f of GENERATED) {
      expect(readFileSync(join(client, f), "utf8")).toBe(readFileSync(join(work, f), "utf8"));
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}, 60_000);
