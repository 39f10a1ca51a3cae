// `bun cli/brokers.ts` as an operator runs it: a real process against a real (test) database.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { createTestDatabase, type TestDatabase } from "../../support/db.ts";

const CLI = join(import.meta.dir, "..", "..", "..", "cli", "brokers.ts");
const APP_SECRET = randomBytes(32).toString("base64");

let database: TestDatabase;
let sql: SQL;

beforeAll(async () => {
  database = await createTestDatabase("brokerscli");
  sql = new SQL(database.url, { max: 1 });
});

afterAll(async () => {
  await sql?.close();
  await database?.drop();
});

async function brokers(...args: string[]): Promise<{ code: number; stdout: string; stderr: string; lines: string[] }> {
  const proc = Bun.spawn([process.execPath, CLI, ...args], {
    env: { ...process.env, DATABASE_URL: database.url, APP_SECRET },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr, lines: stdout.split("\n").filter((l) => l !== "") };
}

test("add stores the URL encrypted; list masks the password", async () => {
  const add = await brokers("add", "rabbit-main", "amqp://svc:hunter2@127.0.0.1:5672/prod");
  expect(add.stderr).toBe("");
  expect(add.code).toBe(0);
  expect(add.stdout).toContain("amqp broker rabbit-main");
  expect(add.stdout).not.toContain("hunter2");
  expect((await brokers("add", "nats1", "nats://127.0.0.1:4222")).code).toBe(0);

  const rows = (await sql`SELECT name, type, url FROM brokers ORDER BY name`) as { name: string; type: string; url: string }[];
  expect(rows.map((r) => [r.name, r.type])).toEqual([["nats1", "nats"], ["rabbit-main", "amqp"]]);
  for (const r of rows) {
    expect(r.url.startsWith("v2.k0.")).toBe(true);
    expect(r.url).not.toContain("127.0.0.1");
  }

  const list = await brokers("list");
  expect(list.code).toBe(0);
  expect(list.lines[0]).toBe("name\ttype\turl\tcreated");
  expect(list.lines[1]).toStartWith("nats1\tnats\tnats://127.0.0.1:4222");
  expect(list.lines[2]).toStartWith("rabbit-main\tamqp\tamqp://svc:***@127.0.0.1:5672/prod\t");
  expect(list.stdout).not.toContain("hunter2");
});

test("a NATS token (nats://TOKEN@host, a user name without a password) is masked too", async () => {
  const add = await brokers("add", "nats-token", "nats://s3cr3t-token@127.0.0.1:4222");
  expect([add.code, add.stdout]).toEqual([0, "Added nats broker nats-token: nats://***@127.0.0.1:4222\n"]);
  const list = await brokers("list");
  expect(list.lines.find((l) => l.startsWith("nats-token\t"))).toStartWith("nats-token\tnats\tnats://***@127.0.0.1:4222\t");
  expect(list.stdout).not.toContain("s3cr3t-token");
  expect((await brokers("remove", "nats-token")).code).toBe(0);
});

test("bad input exits 2 and changes nothing; a taken name or an unknown one exits 1", async () => {
  const before = await sql`SELECT count(*)::int AS n FROM brokers`;
  const cases = [
    [],
    ["add"],
    ["add", "x"],
    ["add", "bad name", "amqp://127.0.0.1"],
    ["add", "x", "http://127.0.0.1:5672"],
    ["add", "x", "not a url"],
    ["add", "x", "amqp://127.0.0.1", "extra"],
    ["remove"],
    ["list", "extra"],
    ["frobnicate"],
  ];
  // Run at once: each is its own process, and one after another they took half a minute on a loaded machine.
  for (const run of await Promise.all(cases.map((args) => brokers(...args)))) {
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("Usage:");
  }
  expect(await sql`SELECT count(*)::int AS n FROM brokers`).toEqual(before);
  const dup = await brokers("add", "nats1", "nats://127.0.0.1:4223");
  expect(dup.code).toBe(1);
  expect(dup.stderr).toContain("already exists");
  const missing = await brokers("remove", "nope");
  expect(missing.code).toBe(1);
  expect(missing.stderr).toContain("no broker nope");
});

test("remove is refused while a subscription uses the broker, and works once it does not", async () => {
  await sql`INSERT INTO api_keys (id, name, secret_hash, chains) VALUES ('key_01JAAAAAAAAAAAAAAAAAAAAAAA', 't', 'h', '{tron:nile}')`;
  await sql`INSERT INTO subscriptions (id, key_id, destination_type, url, broker, subject, events, status, secret, created_at, updated_at)
    VALUES ('sub_01JAAAAAAAAAAAAAAAAAAAAAAA', 'key_01JAAAAAAAAAAAAAAAAAAAAAAA', 'nats', '', 'nats1', 'a.b', '{service.ping}', 'enabled', 'x', now(), now())`;
  const refused = await brokers("remove", "nats1");
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("used by 1 subscription");
  expect((await sql`SELECT name FROM brokers WHERE name = 'nats1'`).length).toBe(1);
  await sql`DELETE FROM subscriptions`;
  const ok = await brokers("remove", "nats1");
  expect(ok.code).toBe(0);
  expect((await sql`SELECT name FROM brokers WHERE name = 'nats1'`).length).toBe(0);
});

test("grant, grants and revoke: what each key may name on a broker", async () => {
  expect((await brokers("add", "shared", "nats://127.0.0.1:4222")).code).toBe(0);
  const keyId = "key_01JDX4Q3ZK7M2N8P5R6S9T0V1W";
  await sql`INSERT INTO api_keys (id, name, secret_hash, chains) VALUES (${keyId}, 'cli', 'h-cli', '{}')`;
  const grant = await brokers("grant", "shared", keyId, "--prefix", "tenant-a.");
  expect([grant.code, grant.stderr]).toEqual([0, ""]);
  expect(grant.stdout).toBe(`Granted ${keyId} the names under "tenant-a." on shared\n`);
  expect((await brokers("grant", "shared", "*", "--prefix", "tenants.{keyId}.", "--default-exchange")).code).toBe(0);

  const list = await brokers("grants", "shared");
  expect(list.lines[0]).toBe("broker\tkey\tprefix\tdefault_exchange\tcreated");
  expect(list.lines.slice(1).map((l) => l.split("\t").slice(0, 4))).toEqual([
    ["shared", "*", '"tenants.{keyId}."', "true"],
    ["shared", keyId, '"tenant-a."', "false"],
  ]);

  // Refusals: exit 1 for what does not exist, 2 for bad input.
  expect((await brokers("grant", "no-such", keyId, "--prefix", "x.")).code).toBe(1);
  expect((await brokers("grant", "shared", "key_01JDX4Q3ZK7M2N8P5R6S9T0V1X", "--prefix", "x.")).code).toBe(1);
  expect((await brokers("grant", "shared", keyId)).code).toBe(2);
  expect((await brokers("grant", "shared", "not-a-key", "--prefix", "x.")).code).toBe(2);

  const revoke = await brokers("revoke", "shared", keyId, "--prefix", "tenant-a.");
  expect(revoke.code).toBe(0);
  expect((await brokers("revoke", "shared", keyId)).code).toBe(1);
  expect((await brokers("grants")).lines.length).toBe(2);
  // A broker's grants go with it.
  expect((await brokers("remove", "shared")).code).toBe(0);
  expect((await brokers("grants")).lines.length).toBe(1);
});
