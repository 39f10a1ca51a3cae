// The events' daily partitions (migrations 0004, 0005): made ahead of time, and dropped whole once older than
// EVENT_RETENTION_DAYS (README "Events"). events, event_deliveries and delivery_attempts share the bounds of the
// event's created_at. Rows outside every partition sit in the default partitions (an insert is never refused);
// retention deletes those in short batches, as they are strays, and the transfer identities and search refs of the
// days dropped (event_transfer_keys, event_addresses, event_tx_refs: unpartitioned) the same way.
import type { Logger } from "../common/logger.ts";
import type { DelivererDb } from "./store.ts";

export const PARTITIONED_TABLES = ["events", "event_deliveries", "delivery_attempts"] as const;
/** The unpartitioned tables of an event's identity and search refs, each with its event's created_at indexed. */
const EVENT_REF_TABLES = { event_transfer_keys: "event_created_at", event_addresses: "created_at", event_tx_refs: "created_at" } as const;
/** Days made ahead of today, so a missed maintenance run or two still leaves tomorrow's partition in place. */
export const PARTITION_DAYS_AHEAD = 3;
const DAY_MS = 86_400_000;
/** Rows deleted per statement from a default partition, or from the search refs. */
const STRAY_BATCH = 5_000;
/** The default partition's column the retention compares, per table. */
const TIME_COLUMN: Record<(typeof PARTITIONED_TABLES)[number], string> = {
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
// per delivery); this reads the same characters with a table. test/unit/partitions.test.ts holds the two equal (a
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
  ) {}

  /** Makes the daily partitions of every table for each day of [from, to] that has none; returns how many were made. */
  async ensure(from: Date, to: Date): Promise<number> {
    let made = 0;
    for (let t = Math.floor(from.getTime() / DAY_MS) * DAY_MS; t <= to.getTime(); t += DAY_MS) {
      const day = utcDay(t);
      for (const table of PARTITIONED_TABLES) {
        const [row] = (await this.db.$client`SELECT deliverer_ensure_partition(${table}, ${day}::date) AS made`) as { made: boolean }[];
        if (row?.made) made++;
      }
    }
    return made;
  }

  /** The first day kept: partitions of earlier days are dropped. */
  cutoffDay(now: number): string {
    return utcDay(now - this.retentionDays * DAY_MS);
  }

  /**
   * Drops every daily partition whose day is before the cutoff (a whole day at once, never row by row), then deletes
   * the strays older than the cutoff from the default partitions in short batches. Returns the partitions dropped.
   */
  async dropExpired(now: number): Promise<string[]> {
    const cutoff = this.cutoffDay(now);
    const parts = (await this.db.$client`
      SELECT c.relname AS name, p.relname AS parent FROM pg_inherits i
      JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
      WHERE p.relname IN ${this.db.$client(PARTITIONED_TABLES as unknown as string[])}`) as { name: string; parent: string }[];
    const dropped: string[] = [];
    for (const { name, parent } of parts) {
      const m = /_p(\d{4})(\d{2})(\d{2})$/.exec(name);
      if (!m || name !== `${parent}_p${m[1]}${m[2]}${m[3]}`) continue;
      if (`${m[1]}-${m[2]}-${m[3]}` >= cutoff) continue;
      await this.db.$client.unsafe(`DROP TABLE IF EXISTS "${name}"`);
      dropped.push(name);
    }
    for (const table of PARTITIONED_TABLES) await this.deleteBefore(`${table}_default`, TIME_COLUMN[table], cutoff);
    // The identities and search refs have no partitions (schema.ts): their expired rows go by range of an index.
    for (const [table, column] of Object.entries(EVENT_REF_TABLES)) await this.deleteBefore(table, column, cutoff);
    if (dropped.length > 0) this.logger?.info("event partitions dropped (retention)", { cutoff, dropped: dropped.length });
    return dropped;
  }

  /** Deletes a table's rows whose time column lies before the cutoff, STRAY_BATCH rows per statement. */
  private async deleteBefore(table: string, column: string, cutoff: string): Promise<void> {
    for (;;) {
      const res = await this.db.$client.unsafe(
        `DELETE FROM "${table}" WHERE ctid = ANY (ARRAY(SELECT ctid FROM "${table}" WHERE "${column}" < $1 LIMIT ${STRAY_BATCH}))`,
        [cutoff],
      );
      if ((res as unknown as { count: number }).count < STRAY_BATCH) break;
    }
  }

  /** One maintenance pass: today's and the next days' partitions, then retention. */
  async maintain(now = Date.now()): Promise<void> {
    await this.ensure(new Date(now), new Date(now + PARTITION_DAYS_AHEAD * DAY_MS));
    await this.dropExpired(now);
  }
}
