// The fault run's own PostgreSQL (test/support/pg-cluster.ts): a crash there must behave like a real server's, which
// never loses a transaction it reported committed. Losing some would move the matchers' checkpoints backwards and
// drop accepted events, and the fault run would blame the product for the harness.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { startPgCluster, type PgCluster } from "../../support/pg-cluster.ts";

let pg: PgCluster;
beforeAll(async () => {
  pg = await startPgCluster({ maxConnections: 20 });
}, 60_000);
afterAll(async () => {
  await pg?.stop();
});

test("an immediate stop (a crash) keeps every transaction that was reported committed", async () => {
  const sql = new SQL({ url: pg.url("postgres"), max: 1 });
  await sql`CREATE TABLE committed (n int PRIMARY KEY)`;
  // One commit a statement, the last just before the crash: what a matcher writing its checkpoint does.
  for (let n = 1; n <= 200; n++) await sql`INSERT INTO committed VALUES (${n})`;
  await sql.close();
  await pg.restart({ mode: "immediate" });
  const after = new SQL({ url: pg.url("postgres"), max: 1 });
  const [row] = (await after`SELECT count(*)::int AS n, max(n) AS top FROM committed`) as { n: number; top: number }[];
  await after.close();
  expect(row).toEqual({ n: 200, top: 200 });
}, 120_000);
