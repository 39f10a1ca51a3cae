// Each test run gets its own PostgreSQL database (dropped afterwards) so runs never collide.
import { SQL } from "bun";

const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(label = "t"): Promise<TestDatabase> {
  const name = `webhooks_${label.replace(/[^a-z0-9_]/gi, "").toLowerCase()}_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
  const admin = new SQL(ADMIN_URL, { max: 1 });
  await admin.unsafe(`CREATE DATABASE "${name}"`);
  await admin.close();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const a = new SQL(ADMIN_URL, { max: 1 });
      try {
        await a.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await a.close();
      }
    },
  };
}
