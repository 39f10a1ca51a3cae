// gen/ is committed; this proves it is exactly what `buf generate` makes from proto/ today.
import { expect, test } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

const root = join(import.meta.dir, "..", "..", "..");

function listFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? listFiles(p) : [p];
  });
}

test("gen/ matches buf generate output for proto/", () => {
  const work = mkdtempSync(join(tmpdir(), "buf-fresh-"));
  try {
    for (const f of ["buf.yaml", "buf.gen.yaml"]) cpSync(join(root, f), join(work, f));
    cpSync(join(root, "proto"), join(work, "proto"), { recursive: true });
    const res = Bun.spawnSync([join(root, "node_modules", ".bin", "buf"), "generate"], {
      cwd: work,
      env: { ...process.env, PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH}` },
    });
    expect(res.stderr.toString()).toBe("");
    expect(res.exitCode).toBe(0);
    const fresh = listFiles(join(work, "gen")).map((p) => relative(join(work, "gen"), p)).sort();
    const committed = listFiles(join(root, "gen")).map((p) => relative(join(root, "gen"), p)).sort();
    expect(committed).toEqual(fresh);
    for (const f of fresh) {
      expect(readFileSync(join(root, "gen", f), "utf8")).toBe(readFileSync(join(work, "gen", f), "utf8"));
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}, 60_000);
