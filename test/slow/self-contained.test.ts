// The repository stands alone: a copy of what git would hand a new clone (tracked files plus untracked, non-ignored
// ones, so work not yet committed counts too), with nothing beside it, passes the type check and an end-to-end test.
// CI may keep other folders next to the checkout; this copy has none, so any path leaving the repository breaks here.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

const root = join(import.meta.dir, "..", "..");
/** Set in the copy's environment: the copy never runs this file again (no recursion). */
const MARK = "SELF_CONTAINED_COPY";

let work: string;
let repo: string;

function run(cmd: string[], cwd: string, timeoutMs: number) {
  const res = Bun.spawnSync(cmd, { cwd, env: { ...process.env, [MARK]: "1" }, timeout: timeoutMs });
  return { exitCode: res.exitCode, output: res.stdout.toString() + res.stderr.toString() };
}

beforeAll(() => {
  if (process.env[MARK]) return;
  work = mkdtempSync(join(tmpdir(), "whk-clone-"));
  repo = join(work, "repo");
  const listed = Bun.spawnSync(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: root });
  if (listed.exitCode !== 0) throw new Error(`git ls-files failed: ${listed.stderr.toString()}`);
  for (const file of listed.stdout.toString().split("\0")) {
    // Deleted-but-tracked files are listed too; symlinks (none expected) are not followed out of the tree.
    if (!file || !existsSync(join(root, file)) || lstatSync(join(root, file)).isDirectory()) continue;
    mkdirSync(dirname(join(repo, file)), { recursive: true });
    copyFileSync(join(root, file), join(repo, file));
  }
  // Installed packages are not the repository's content: borrow them instead of installing again (the root's, and
  // those npm nested in a workspace, such as the client generator's TypeScript 5).
  const workspaces = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { workspaces?: string[] }).workspaces ?? [];
  for (const dir of [".", ...workspaces]) {
    if (existsSync(join(root, dir, "node_modules"))) symlinkSync(join(root, dir, "node_modules"), join(repo, dir, "node_modules"), "dir");
  }
});

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

test.skipIf(Boolean(process.env[MARK]))(
  "a copy with nothing beside it passes the type check and the matcher's end-to-end test",
  () => {
    expect(existsSync(join(repo, "..", "shared"))).toBe(false);
    expect(existsSync(join(repo, "fixtures", "tron", "PROVENANCE.md"))).toBe(true);

    const typecheck = run([join(repo, "node_modules", ".bin", "tsc"), "--noEmit", "-p", "tsconfig.json"], repo, 240_000);
    expect(typecheck.output).not.toContain("error TS");
    expect(typecheck.exitCode).toBe(0);

    const e2e = run(
      [join(repo, "node_modules", ".bin", "bun"), "test", "--timeout", "60000", "test/integration/matcher/e2e.test.ts"],
      repo,
      240_000,
    );
    expect(e2e.output).toMatch(/\b[1-9]\d* pass\b/);
    expect(e2e.output).toMatch(/\b0 fail\b/);
    expect(e2e.exitCode).toBe(0);
  },
  480_000,
);
