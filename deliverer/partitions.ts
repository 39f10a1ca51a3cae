// The events' daily partitions (migrations 0004, 0005): made ahead of time, and dropped whole once older than
// EVENT_RETENTION_DAYS (docs/adr/0002-events-partitioned-by-day.md). events, event_deliveries and delivery_attempts share the bounds of the
// event's created_at. Rows outside every partition sit in the default partitions (an insert is never refused);
// retention deletes those in short batches, as they are strays, and the transfer identities and search refs of the
// days dropped (event_transfer_keys, event_addresses, event_tx_refs: unpartitioned) the same way. Only final events
// go: a pending one (retrying, held for a disabled subscription or a revoked key, retried or recovered by a user) is
// moved out of its expired day into the default partition, with its attempts and refs, and goes once it is final.
// Making or dropping a partition locks its parent or the default partition exclusively: every such wait is bounded by
// a short lock_timeout, so a long read never queues the events' reads and writes behind it; the step that gave up is
// retried by a later pass (PartitionPass.complete false).
import type { Logger } from "../common/logger.ts";
import type { DelivererDb } from "./db/connection.ts";

export const PARTITIONED_TABLES = ["events", "event_deliveries", "delivery_attempts"] as const;
type Partitioned = (typeof PARTITIONED_TABLES)[number];
/** A row on `x` whose event is still there, from its event id and created_at columns. */
const eventExists = (id: string, at: string) => `EXISTS (SELECT 1 FROM events e WHERE e.id = x.${id} AND e.created_at = x.${at})`;
/**
 * The rows of an expired day that stay, per table (on row `x`): the states decide (pending stays), the events follow
 * their states and the attempts their events. A day's tables go in this order, each in its own transaction: what
 * one leaves is what the next reads, so a pass cut short anywhere leaves a state the next pass completes.
 */
const STAYS: Record<Partitioned, string> = {
  event_deliveries: "x.status = 'pending'",
  events: "EXISTS (SELECT 1 FROM event_deliveries d WHERE d.event_id = x.id AND d.created_at = x.created_at)",
  delivery_attempts: eventExists("event_id", "event_created_at"),
};
const DROP_ORDER: readonly Partitioned[] = ["event_deliveries", "events", "delivery_attempts"];
/** The unpartitioned tables of an event's identity and search refs: the time column (indexed) and what keeps a row. */
const EVENT_REF_TABLES = {
  event_transfer_keys: { column: "event_created_at", stays: eventExists("event_id", "event_created_at") },
  event_addresses: { column: "created_at", stays: eventExists("event_id", "created_at") },
  event_tx_refs: { column: "created_at", stays: eventExists("event_id", "created_at") },
} as const;
/**
 * The most pending events an expired day may move out at once: the move runs under the partition's exclusive lock, so
 * a day with more (a subscription disabled with a large backlog) is kept whole for now, and looked at again next pass.
 */
const MOVE_LIMIT = 10_000;
/** How long making or dropping a partition waits for its lock; everything that touches the table waits behind it. */
export const PARTITION_LOCK_TIMEOUT_MS = 1_000;
/** SQLSTATE lock_not_available: lock_timeout ran out. */
const LOCK_NOT_AVAILABLE = "55P03";

/** What one upkeep step did: its count, and whether it finished (false: a lock or an error stopped it; retry). */
export interface PartitionPass<T> {
  result: T;
  complete: boolean;
}
/** Days made ahead of today, so a missed maintenance run or two still leaves tomorrow's partition in place. */
export const PARTITION_DAYS_AHEAD = 3;
const DAY_MS = 86_400_000;
/** Rows deleted per statement from a default partition, or from the search refs. */
const STRAY_BATCH = 5_000;
/** The default partition's column the retention compares, per table. */
const TIME_COLUMN: Record<Partitioned, string> = {
  events: "created_at",
  event_deliveries: "created_at",
  delivery_attempts: "event_created_at",
};

/**
 * How far an event's created_at may lie from the time in its id (a ULID minted beside created_at: the same clock,
 * milliseconds apart; the slack covers a clock stepped back, which the monotonic ULID factory rides out). A lookup by
 * id alone bounds created_at by this window so it visits one or two partitions.
 */
export const ID_TIME_SLACK_MS = 10 * 60_000;

// A ULID's time: its first 10 Crockford base32 characters (either case). The `ulid` package's decodeTime splits,
// reverses and reduces the string, and eventTimeWindow runs for every id of every claim load and outcome write (twice
// per delivery); this reads the same characters with a table. test/unit/deliverer/partitions.test.ts holds the two equal (a
// non-ASCII letter that decodeTime's toUpperCase would map into the alphabet, never in an id minted here, gives no
// window: the lookup then reads every partition).
const ULID_LENGTH = 26;
const TIME_CHARS = 10;
const TIME_MAX = 2 ** 48 - 1;
const BASE32 = new Int8Array(128).fill(-1);
[..."0123456789ABCDEFGHJKMNPQRSTVWXYZ"].forEach((c, i) => {
  BASE32[c.charCodeAt(0)] = i;
  BASE32[c.toLowerCase().charCodeAt(0)] = i;
});

/** decodeTime of the ULID starting at `from`, or undefined where decodeTime throws. */
function ulidTime(id: string, from: number): number | undefined {
  if (id.length - from !== ULID_LENGTH) return undefined;
  let t = 0;
  for (let i = from; i < from + TIME_CHARS; i++) {
    const code = id.charCodeAt(i);
    const v = code < 128 ? BASE32[code]! : -1;
    if (v < 0) return undefined;
    t = t * 32 + v;
  }
  return t > TIME_MAX ? undefined : t;
}

/** The created_at bounds an event with this id lies in, or undefined when the id carries no ULID time. */
export function eventTimeWindow(ids: readonly string[]): { from: Date; to: Date } | undefined {
  let min = Infinity;
  let max = -Infinity;
  for (const id of ids) {
    const t = ulidTime(id, id.indexOf("_") + 1);
    if (t === undefined) return undefined;
    if (t < min) min = t;
    if (t > max) max = t;
  }
  if (!Number.isFinite(min)) return undefined;
  return { from: new Date(min - ID_TIME_SLACK_MS), to: new Date(max + ID_TIME_SLACK_MS) };
}

/** The UTC day (YYYY-MM-DD) of a time. */
export function utcDay(ms: number): string {
  return new Date(Math.floor(ms / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
}

export class EventPartitions {
  constructor(
    private readonly db: DelivererDb,
    private readonly retentionDays: number,
    private readonly logger?: Logger,
    private readonly lockTimeoutMs = PARTITION_LOCK_TIMEOUT_MS,
  ) {}

  /** Makes the daily partitions of every table for each day of [from, to] that has none; returns how many were made. */
  async ensure(from: Date, to: Date): Promise<number> {
    const pass = await this.ensurePass(from, to);
    if (!pass.complete) throw new Error("event partitions not all made (see the log); retry");
    return pass.result;
  }

  /**
   * Makes the missing daily partitions of [from, to], each on its own (one that cannot be made, its lock taken or an
   * error, does not keep the others from being made). A default partition's rows of the day move into the new one
   * (migration 0010).
   */
  async ensurePass(from: Date, to: Date): Promise<PartitionPass<number>> {
    let made = 0;
    let complete = true;
    for (let t = Math.floor(from.getTime() / DAY_MS) * DAY_MS; t <= to.getTime(); t += DAY_MS) {
      const day = utcDay(t);
      for (const table of PARTITIONED_TABLES) {
        try {
          const made1 = await this.bounded(async (tx) => {
            const [row] = (await tx`SELECT deliverer_ensure_partition(${table}, ${day}::date) AS made`) as { made: boolean }[];
            return row?.made === true;
          });
          if (made1) made++;
        } catch (err) {
          complete = false;
          this.logger?.warn("event partition not made; it is retried", { table, day, lockTimeout: isLockTimeout(err), err });
        }
      }
    }
    return { result: made, complete };
  }

  /**
   * Today's and the next days' partitions, before the deliverer serves: retried until made or `deadlineMs` passed (a
   * write meanwhile lands in the default partition and is moved into its day when the day is made). Returns whether
   * every partition is there.
   */
  async prepare(now = Date.now(), deadlineMs = 30_000, pauseMs = 500): Promise<boolean> {
    const until = Date.now() + deadlineMs;
    for (;;) {
      const pass = await this.ensurePass(new Date(now), new Date(now + PARTITION_DAYS_AHEAD * DAY_MS));
      if (pass.complete) return true;
      if (Date.now() + pauseMs > until) return false;
      await Bun.sleep(pauseMs);
    }
  }

  /** One transaction whose lock waits end after lockTimeoutMs (SQLSTATE 55P03). */
  private bounded<T>(work: (tx: Bun.SQL) => Promise<T>): Promise<T> {
    return this.db.$client.begin(async (tx) => {
      await tx.unsafe(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(this.lockTimeoutMs))}`);
      return work(tx);
    });
  }

  /** The first day kept: partitions of earlier days are dropped. */
  cutoffDay(now: number): string {
    return utcDay(now - this.retentionDays * DAY_MS);
  }

  /**
   * Drops every daily partition whose day is before the cutoff (a whole day at once, never row by row), moving the
   * day's events that are not final into the default partition first; then deletes the final strays older than the
   * cutoff from the default partitions, and the identities and search refs whose event is gone, in short batches.
   * Returns the partitions dropped.
   */
  async dropExpired(now: number): Promise<string[]> {
    return (await this.dropExpiredPass(now)).result;
  }

  /** dropExpired, telling whether it finished: a day whose lock was not had in time is left to a later pass. */
  async dropExpiredPass(now: number): Promise<PartitionPass<string[]>> {
    const cutoff = this.cutoffDay(now);
    const parts = (await this.db.$client`
      SELECT c.relname AS name, p.relname AS parent FROM pg_inherits i
      JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
      WHERE p.relname IN ${this.db.$client(PARTITIONED_TABLES as unknown as string[])}`) as { name: string; parent: Partitioned }[];
    const days = new Map<string, Map<Partitioned, string>>();
    for (const { name, parent } of parts) {
      const m = /_p(\d{4})(\d{2})(\d{2})$/.exec(name);
      if (!m || name !== `${parent}_p${m[1]}${m[2]}${m[3]}`) continue;
      const day = `${m[1]}-${m[2]}-${m[3]}`;
      if (day >= cutoff) continue;
      if (!days.has(day)) days.set(day, new Map());
      days.get(day)!.set(parent, name);
    }
    const dropped: string[] = [];
    let kept = 0;
    let complete = true;
    days: for (const [day, tables] of [...days].sort(([a], [b]) => a.localeCompare(b))) {
      const states = tables.get("event_deliveries");
      const pending = states ? await this.pendingIn(states) : 0;
      if (pending > MOVE_LIMIT) {
        this.logger?.warn("expired event day kept: too many events not final to move at once", { day, pending });
        continue;
      }
      for (const table of DROP_ORDER) {
        const name = tables.get(table);
        if (!name) continue;
        try {
          kept += await this.dropDay(table, name);
        } catch (err) {
          // The day's tables go in order (STAYS): the rest of this day, and the later days, wait for the next pass.
          complete = false;
          this.logger?.warn("expired event partition not dropped; it is retried", { partition: name, lockTimeout: isLockTimeout(err), err });
          break days;
        }
        dropped.push(name);
      }
    }
    for (const table of DROP_ORDER) {
      await this.deleteBefore(`${table}_default`, TIME_COLUMN[table], cutoff, STAYS[table]);
    }
    // The identities and search refs have no partitions (schema.ts): their expired rows go by range of an index.
    for (const [table, { column, stays }] of Object.entries(EVENT_REF_TABLES)) await this.deleteBefore(table, column, cutoff, stays);
    if (dropped.length > 0) this.logger?.info("event partitions dropped (retention)", { cutoff, dropped: dropped.length, kept });
    return { result: dropped, complete };
  }

  /** Pending states in a day's partition of event_deliveries, counted up to MOVE_LIMIT + 1. */
  private async pendingIn(partition: string): Promise<number> {
    const [row] = (await this.db.$client.unsafe(
      `SELECT count(*)::int AS n FROM (SELECT 1 FROM "${partition}" WHERE status = 'pending' LIMIT ${MOVE_LIMIT + 1}) s`,
    )) as { n: number }[];
    return row?.n ?? 0;
  }

  /**
   * Detaches one expired partition, moves the rows that stay (STAYS) into the default partition and drops the rest,
   * in one transaction: no reader ever sees a kept row missing. Returns the rows moved.
   */
  private async dropDay(table: Partitioned, partition: string): Promise<number> {
    // DETACH … CONCURRENTLY is refused while a default partition exists; a bounded wait instead.
    return this.bounded(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(hashtext('deliverer_partitions'))`;
      const [{ cols }] = (await tx`
        SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) AS cols FROM pg_attribute
        WHERE attrelid = ${table}::regclass AND attnum > 0 AND NOT attisdropped`) as [{ cols: string }];
      await tx.unsafe(`ALTER TABLE "${table}" DETACH PARTITION "${partition}"`);
      // The kept rows keep every column, the stream position (xid, seq) of an event included.
      const moved = await tx.unsafe(
        `INSERT INTO "${table}" (${cols}) OVERRIDING SYSTEM VALUE SELECT ${cols} FROM "${partition}" x WHERE ${STAYS[table]}`,
      );
      await tx.unsafe(`DROP TABLE "${partition}"`);
      return (moved as unknown as { count: number }).count;
    });
  }

  /**
   * Deletes a table's rows whose time column lies before the cutoff and that do not stay, STRAY_BATCH rows per
   * statement. The condition is checked again on the row deleted: a state made pending meanwhile is a new row version,
   * not the one selected, and stays.
   */
  private async deleteBefore(table: string, column: string, cutoff: string, stays: string): Promise<void> {
    for (;;) {
      const res = await this.db.$client.unsafe(
        `DELETE FROM "${table}" x WHERE ctid = ANY (ARRAY(SELECT ctid FROM "${table}" x WHERE x."${column}" < $1 AND NOT (${stays}) LIMIT ${STRAY_BATCH}))
           AND NOT (${stays})`,
        [cutoff],
      );
      if ((res as unknown as { count: number }).count < STRAY_BATCH) break;
    }
  }

  /** One maintenance pass: today's and the next days' partitions, then retention. Returns whether it finished. */
  async maintain(now = Date.now()): Promise<boolean> {
    const made = await this.ensurePass(new Date(now), new Date(now + PARTITION_DAYS_AHEAD * DAY_MS));
    const dropped = await this.dropExpiredPass(now);
    return made.complete && dropped.complete;
  }
}

function isLockTimeout(err: unknown): boolean {
  const e = err as { errno?: unknown; code?: unknown } | null;
  return e?.errno === LOCK_NOT_AVAILABLE || e?.code === LOCK_NOT_AVAILABLE;
}
