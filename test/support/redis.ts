// Each test file that needs Redis takes a DB number of its own (1..15) through a lease kept in DB 0, so it may
// FLUSHDB freely without touching another run's keys.
import Redis from "ioredis";

const BASE = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const LEASE_MS = 15 * 60_000;

export interface TestRedis {
  url: string;
  db: number;
  release(): Promise<void>;
}

export async function allocateRedisDb(): Promise<TestRedis> {
  const control = new Redis(`${BASE}/0`, { lazyConnect: false, maxRetriesPerRequest: 2 });
  const token = `${process.pid}:${Math.random().toString(36).slice(2)}`;
  try {
    for (let attempt = 0; attempt < 600; attempt++) {
      for (let db = 1; db <= 15; db++) {
        const ok = await control.set(`test:redis-db-lease:${db}`, token, "PX", LEASE_MS, "NX");
        if (ok === "OK") {
          const client = new Redis(`${BASE}/${db}`);
          await client.flushdb();
          client.disconnect();
          return {
            url: `${BASE}/${db}`,
            db,
            async release() {
              const c = new Redis(`${BASE}/0`);
              const cur = await c.get(`test:redis-db-lease:${db}`);
              if (cur === token) await c.del(`test:redis-db-lease:${db}`);
              c.disconnect();
            },
          };
        }
      }
      await Bun.sleep(100);
    }
    throw new Error("no free Redis test DB (1..15) within a minute");
  } finally {
    control.disconnect();
  }
}
