// package.json's `engines.node` is the promise made to whoever runs `npm install`: every installed package must
// accept the oldest Node.js it names (npm would print EBADENGINE otherwise), and the Node.js running the tests must
// meet it.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "..", "..", "..");
const readJson = (file: string) => JSON.parse(readFileSync(join(root, file), "utf8"));

interface LockEntry {
  version?: string;
  engines?: { node?: string } | string[];
}

/** The lowest version a `>=X.Y.Z` range admits. */
function floorOf(range: string): string {
  const m = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(range.trim());
  if (!m) throw new Error(`package.json engines.node should be ">=X[.Y[.Z]]", found ${JSON.stringify(range)}`);
  return `${m[1]}.${m[2] ?? 0}.${m[3] ?? 0}`;
}

test("every locked package accepts the oldest Node.js package.json declares", () => {
  const declared: string = readJson("package.json").engines.node;
  const floor = floorOf(declared);
  const lock: { packages: Record<string, LockEntry> } = readJson("package-lock.json");
  const refused: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === "") continue;
    const engines = entry.engines;
    // Old packages wrote engines as an array; npm ignores that form.
    const range = engines && !Array.isArray(engines) ? engines.node : undefined;
    if (range && !Bun.semver.satisfies(floor, range)) refused.push(`${path}@${entry.version}: node ${range}`);
  }
  expect(refused).toEqual([]);
});

test("the Node.js on this machine meets package.json's engines", () => {
  const declared: string = readJson("package.json").engines.node;
  const node = Bun.spawnSync(["node", "--version"]).stdout.toString().trim().replace(/^v/, "");
  expect(Bun.semver.satisfies(node, declared)).toBe(true);
});
