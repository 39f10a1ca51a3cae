// Every service's connections run with JIT compilation off (common/db.ts), even on a server set to compile every
// statement: a generic plan over the daily partitions is estimated at every partition's share, and at 10,000,000
// events a subscription's page of 50 was compiled on each run (README "Benchmarks", events).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { openDelivererDatabase, openPlannedReads } from "../../../deliverer/db/connection.ts";
import { openMatcherDatabase } from "../../../matcher/store.ts";
import { openRegistryDatabase } from "../../../registry/db/connection.ts";
import { createTestDatabase, type TestDatabase } from "../../support/db.ts";

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase("dbsettings");
  // This database's own default: JIT on, for any statement at all.
  const admin = new SQL(database.url, { max: 1 });
  await admin.unsafe(`ALTER DATABASE "${database.name}" SET jit = on`);
  await admin.unsafe(`ALTER DATABASE "${database.name}" SET jit_above_cost = 0`);
  // The server's own default is JIT on too (the control test below shows that a plain connection compiles).
  const [plain] = (await admin`SHOW jit`) as { jit: string }[];
  expect(plain!.jit).toBe("on");
  await admin.close();
}, 60_000);

afterAll(async () => {
  await database?.drop();
}, 60_000);

/** EXPLAIN ANALYZE of a statement on one of the pool's connections: it has a "JIT:" section when it was compiled. */
async function compiled(client: SQL): Promise<boolean> {
  const rows = (await client.unsafe("EXPLAIN (ANALYZE) SELECT sum(g) FROM generate_series(1, 1000) g")) as { "QUERY PLAN": string }[];
  return rows.some((r) => r["QUERY PLAN"].startsWith("JIT:"));
}

test("the control: a plain connection to this database compiles a statement when the server has JIT", async () => {
  const plain = new SQL(database.url, { max: 1 });
  try {
    const [avail] = (await plain`SELECT pg_jit_available() AS ok`) as { ok: boolean }[];
    expect(await compiled(plain)).toBe(avail!.ok);
  } finally {
    await plain.close();
  }
});

test("every service's pools run with JIT off, whatever the database's default", async () => {
  const deliverer = await openDelivererDatabase(database.url, { max: 2 });
  const planned = openPlannedReads(database.url, { max: 1 });
  const registry = await openRegistryDatabase(database.url, { max: 2 });
  const matcher = await openMatcherDatabase(database.url, { max: 2 });
  try {
    for (const db of [deliverer, planned, registry, matcher]) {
      const [row] = (await db.$client`SHOW jit`) as { jit: string }[];
      expect(row!.jit).toBe("off");
      expect(await compiled(db.$client)).toBe(false);
    }
    // The pools' own settings stay beside it.
    const [generic] = (await deliverer.$client`SHOW plan_cache_mode`) as { plan_cache_mode: string }[];
    expect(generic!.plan_cache_mode).toBe("force_generic_plan");
    const [sort] = (await planned.$client`SHOW enable_sort`) as { enable_sort: string }[];
    expect(sort!.enable_sort).toBe("off");
  } finally {
    for (const db of [deliverer, planned, registry, matcher]) await db.$client.close();
  }
}, 60_000);
