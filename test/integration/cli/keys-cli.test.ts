// `bun cli/keys.ts` as an operator runs it: a real process against a real (test) database.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { join } from "node:path";
import { createTestDatabase, type TestDatabase } from "../../support/db.ts";
import { allocateRedisDb, type TestRedis } from "../../support/redis.ts";

const CLI = join(import.meta.dir, "..", "..", "..", "cli", "keys.ts");

let database: TestDatabase;
let redisDb: TestRedis;
let sql: SQL;

beforeAll(async () => {
  database = await createTestDatabase("keyscli");
  redisDb = await allocateRedisDb();
  sql = new SQL(database.url, { max: 1 });
});

afterAll(async () => {
  await sql?.close();
  await redisDb?.release();
  await database?.drop();
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  lines: string[];
}

async function keys(...args: string[]): Promise<Run> {
  const proc = Bun.spawn([process.execPath, CLI, ...args], {
    env: { ...process.env, DATABASE_URL: database.url, REDIS_URL: redisDb.url, APP_SECRET: "" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr, lines: stdout.split("\n").filter((l) => l !== "") };
}

async function keyRows(): Promise<{ id: string; name: string; chains: string[]; secret_hash: string; revoked_at: Date | null }[]> {
  return (await sql`SELECT id, name, chains, secret_hash, revoked_at FROM api_keys ORDER BY created_at, id`) as never;
}

const sha256 = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest("hex");

test("create prints the id on its own line and the key alone on the last line; only the hash is stored", async () => {
  const run = await keys("create", "--name", "ops team", "--chains", "tron:nile,tron:mainnet");
  expect(run.stderr).toBe("");
  expect(run.code).toBe(0);
  const key = run.lines.at(-1)!;
  expect(key).toMatch(/^whk_[A-Za-z0-9_-]{43}$/);
  const idLine = run.lines.find((l) => /^key_[0-9A-HJKMNP-TV-Z]{26}$/.test(l));
  expect(idLine).toBeDefined();

  const rows = await keyRows();
  const row = rows.find((r) => r.id === idLine)!;
  expect(row.name).toBe("ops team");
  expect(row.chains).toEqual(["tron:nile", "tron:mainnet"]);
  expect(row.secret_hash).toBe(sha256(key));
  expect(JSON.stringify(await sql`SELECT * FROM api_keys`)).not.toContain(key.slice(4));

  // Defaults: no name, all three chains.
  const plain = await keys("create");
  expect(plain.code).toBe(0);
  const plainId = plain.lines.find((l) => l.startsWith("key_"))!;
  expect((await keyRows()).find((r) => r.id === plainId)!.chains).toEqual(["tron:mainnet", "tron:nile", "tron:shasta"]);
});

test("list, chains and revoke work on the stored keys", async () => {
  const made = await keys("create", "--name", "to-revoke");
  const id = made.lines.find((l) => l.startsWith("key_"))!;
  const secret = made.lines.at(-1)!;

  const listed = await keys("list");
  expect(listed.code).toBe(0);
  const line = listed.lines.find((l) => l.startsWith(id))!;
  expect(line).toContain("to-revoke");
  expect(line).toContain("active");
  expect(listed.stdout).not.toContain(secret);

  const changed = await keys("chains", id, "tron:shasta,tron:nile");
  expect(changed.code).toBe(0);
  expect((await keyRows()).find((r) => r.id === id)!.chains).toEqual(["tron:shasta", "tron:nile"]);

  const revoked = await keys("revoke", id);
  expect(revoked.code).toBe(0);
  const row = (await keyRows()).find((r) => r.id === id)!;
  expect(row.revoked_at).toBeInstanceOf(Date);
  expect((await keys("list")).lines.find((l) => l.startsWith(id))).toContain("revoked");
  // Both changes left their watch-index change in the outbox, in their own transactions: one row per chain each, for
  // a registry's applier to take up (no registry runs here, so they are all still there).
  const outbox = (await sql`SELECT kind FROM watch_outbox WHERE key_id = ${id}`) as { kind: string }[];
  expect(outbox.map((r) => r.kind)).toEqual(["key", "key", "key", "key", "key", "key"]);
});

test("quotas shows a key's limits, sets its own and puts one back to the default", async () => {
  const made = await keys("create", "--name", "quota");
  const id = made.lines.find((l) => l.startsWith("key_"))!;
  const shown = await keys("quotas", id);
  expect(shown.code).toBe(0);
  expect(shown.lines).toEqual([
    "quota\tlimit\tsource",
    "subscriptions\t10000\tdefault (QUOTA_SUBSCRIPTIONS)",
    "addresses\t10000000\tdefault (QUOTA_ADDRESSES)",
    "deliveries\t128\tdefault (QUOTA_DELIVERIES_IN_FLIGHT)",
    "streams\t16\tdefault (QUOTA_STREAMS)",
  ]);
  const set = await keys("quotas", id, "--subscriptions", "5", "--deliveries", "8", "--streams", "0");
  expect(set.code).toBe(0);
  expect(set.lines).toContain("subscriptions\t5\tthis key's own");
  expect(set.lines).toContain("deliveries\t8\tthis key's own");
  expect(set.lines).toContain("streams\t0\tthis key's own");
  expect((await keys("list")).lines.find((l) => l.startsWith(id))).toEndWith("\tsubscriptions=5,deliveries=8,streams=0");
  const back = await keys("quotas", id, "--deliveries", "default");
  expect(back.lines).toContain("deliveries\t128\tdefault (QUOTA_DELIVERIES_IN_FLIGHT)");
  expect(back.lines).toContain("subscriptions\t5\tthis key's own");
  const [row] = (await sql`SELECT quota_subscriptions, quota_addresses, quota_deliveries, quota_streams FROM api_keys WHERE id = ${id}`) as unknown[];
  expect(row).toEqual({ quota_subscriptions: 5, quota_addresses: null, quota_deliveries: null, quota_streams: 0 });
});

test("bad input exits non-zero with a message and changes nothing", async () => {
  const made = await keys("create", "--name", "stable", "--chains", "tron:mainnet");
  const id = made.lines.find((l) => l.startsWith("key_"))!;
  const before = await keyRows();

  const cases: string[][] = [
    [],
    ["frobnicate"],
    ["create", "--chains", "tron:mainnet,eth:1"],
    ["create", "--chains", ""],
    ["create", "--chains", "tron:mainnet,,tron:nile"],
    ["create", "--bogus-flag"],
    ["create", "extra"],
    ["revoke"],
    ["revoke", "not-a-key"],
    ["revoke", "key_01ARZ3NDEKTSV4RRFFQ69G5FAV"],
    ["chains", id],
    ["chains", id, "tron:moon"],
    ["chains", "key_01ARZ3NDEKTSV4RRFFQ69G5FAV", "tron:nile"],
    ["list", "extra"],
    ["quotas"],
    ["quotas", id, "--streams", "many"],
    ["quotas", "key_01ARZ3NDEKTSV4RRFFQ69G5FAV", "--streams", "2"],
  ];
  // Run at once: each is its own process, and one after another they took a minute on a loaded machine.
  const runs = await Promise.all(cases.map((args) => keys(...args)));
  for (const [i, args] of cases.entries()) {
    const run = runs[i]!;
    expect({ args, code: run.code === 0 ? 0 : "non-zero" }).toEqual({ args, code: "non-zero" });
    expect(run.stderr).toContain("error:");
    expect(run.stdout).not.toMatch(/whk_/);
  }
  expect(await keyRows()).toEqual(before);
});
