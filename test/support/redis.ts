// Each test file that needs Redis takes a DB number of its own through a lease kept in DB 0, so it may FLUSHDB freely
// without touching another run's keys. The numbers come from TEST_REDIS_DBS (default 1-15). A DB is flushed only
// when it is empty or a test run left its keys there (its number is in the "ours" set in DB 0, written when a run
// takes an empty DB and removed when that run hands it back empty); a DB holding anyone else's keys is skipped.
import Redis from "ioredis";

const BASE = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const LEASE_MS = 15 * 60_000;
const LEASE_KEY = (db: number) => `test:redis-db-lease:${db}`;
/** DB numbers whose keys a test run wrote (and may therefore flush). */
const OURS_KEY = "test:redis-dbs-ours";
const CONTROL_DB = 0;
const MAX_DB = 15;

/** Parses TEST_REDIS_DBS: numbers and ranges, comma separated ("1-15", "3,5,7-9"); DB 0 holds the leases. */
export function parseRedisDbs(spec: string): number[] {
  const dbs = new Set<number>();
  for (const part of spec.split(",").map((p) => p.trim())) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) throw new Error(`TEST_REDIS_DBS: "${part}" is not a DB number or a range such as 1-15`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    if (from > to || from <= CONTROL_DB || to > MAX_DB) {
      throw new Error(`TEST_REDIS_DBS: "${part}" must lie within 1-${MAX_DB} (DB ${CONTROL_DB} holds the leases)`);
    }
    for (let db = from; db <= to; db++) dbs.add(db);
  }
  return [...dbs].sort((a, b) => a - b);
}

export const TEST_REDIS_DBS_SPEC = process.env.TEST_REDIS_DBS ?? `1-${MAX_DB}`;

/** One line for the start of a run: where the tests' Redis keys go. */
export function describeTestRedis(): string {
  return (
    `test Redis: DBs ${TEST_REDIS_DBS_SPEC} of ${BASE} (TEST_REDIS_DBS), leases in DB ${CONTROL_DB}; ` +
    "a DB holding keys no test run wrote is skipped, never flushed"
  );
}

export interface TestRedis {
  url: string;
  db: number;
  release(): Promise<void>;
}

export interface AllocateOptions {
  /** DB numbers to choose from (default: TEST_REDIS_DBS). */
  dbs?: number[];
  /** How long to wait for a free DB (default one minute). */
  waitMs?: number;
}

const reportedForeign = new Set<number>();

export async function allocateRedisDb(opts: AllocateOptions = {}): Promise<TestRedis> {
  const dbs = opts.dbs ?? parseRedisDbs(TEST_REDIS_DBS_SPEC);
  const deadline = Date.now() + (opts.waitMs ?? 60_000);
  const control = new Redis(`${BASE}/${CONTROL_DB}`, { lazyConnect: false, maxRetriesPerRequest: 2 });
  const token = `${process.pid}:${Math.random().toString(36).slice(2)}`;
  const foreign = new Set<number>();
  try {
    for (;;) {
      for (const db of dbs) {
        if ((await control.set(LEASE_KEY(db), token, "PX", LEASE_MS, "NX")) !== "OK") continue;
        const client = new Redis(`${BASE}/${db}`);
        try {
          // Under our lease no other run of ours writes here: what it holds now is either ours or someone else's.
          const size = await client.dbsize();
          if (size > 0 && !(await control.sismember(OURS_KEY, String(db)))) {
            foreign.add(db);
            if (!reportedForeign.has(db)) {
              reportedForeign.add(db);
              console.warn(`test Redis: DB ${db} holds ${size} keys no test run wrote; skipping it (TEST_REDIS_DBS picks others)`);
            }
            await control.del(LEASE_KEY(db));
            continue;
          }
          await control.sadd(OURS_KEY, String(db));
          await client.flushdb();
        } finally {
          client.disconnect();
        }
        return {
          url: `${BASE}/${db}`,
          db,
          async release() {
            const c = new Redis(`${BASE}/${CONTROL_DB}`);
            const own = new Redis(`${BASE}/${db}`);
            try {
              if ((await c.get(LEASE_KEY(db))) !== token) return;
              // Hand it back empty and unmarked: a DB someone fills later is theirs, not ours to flush.
              await own.flushdb();
              await c.srem(OURS_KEY, String(db));
              await c.del(LEASE_KEY(db));
            } finally {
              own.disconnect();
              c.disconnect();
            }
          },
        };
      }
      if (Date.now() >= deadline) break;
      await Bun.sleep(100);
    }
    const skipped = foreign.size > 0 ? `; skipped for holding others' keys: ${[...foreign].join(", ")}` : "";
    throw new Error(`no free Redis test DB among ${dbs.join(", ")} (TEST_REDIS_DBS) in time${skipped}`);
  } finally {
    control.disconnect();
  }
}
