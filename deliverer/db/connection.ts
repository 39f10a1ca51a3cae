// The deliverer's database: its connection types and pools (the leaf every module of deliverer/db/ builds on; it
// imports nothing of the folder, so no import circle can run through it).
import { SETTINGS_MIGRATIONS } from "../../common/settings/migrate.ts";
import { openDatabase, openMigratedDatabase, type Database, type DbOptions } from "../../common/db.ts";
import { delivererSchema, type DelivererSchema } from "../schema.ts";

export type DelivererDb = Database<DelivererSchema>;
export type DelivererTx = Parameters<Parameters<DelivererDb["transaction"]>[0]>[0];
export type Executor = DelivererDb | DelivererTx;

export const DELIVERER_MIGRATIONS = new URL("../migrations", import.meta.url).pathname;
export const DELIVERER_MIGRATIONS_TABLE = "__deliverer_migrations";

/**
 * Every statement of the deliverer on the generic plan of its prepared statement. Bun's driver prepares each
 * statement once per connection; PostgreSQL's default (plan_cache_mode auto) then plans it anew on every execution
 * whenever the generic plan is estimated dearer than a custom one, and over the daily partitions it always is: the
 * generic plan's estimate sums every partition, the custom one only those left after pruning on the parameters. But
 * the generic plan prunes the same partitions when it starts (run-time pruning on created_at), so the re-planning
 * buys nothing and costs most of a point read (docs/adr/0004-generic-plans-and-no-jit.md). Where one plan does not
 * fit every value, the statement runs on the planned reads' pool instead (openPlannedReads).
 */
const GENERIC_PLANS = { plan_cache_mode: "force_generic_plan" };

export async function openDelivererDatabase(url: string, opts: DbOptions = {}): Promise<DelivererDb> {
  const own = { folder: DELIVERER_MIGRATIONS, table: DELIVERER_MIGRATIONS_TABLE };
  return openMigratedDatabase(url, delivererSchema, [own, SETTINGS_MIGRATIONS], { ...opts, settings: { ...GENERIC_PLANS, ...opts.settings } });
}

/**
 * A second, small pool for the reads whose plan must follow their values, or must come off an index in order: an
 * address page's events by id when a subscription filters them too, and the StreamEvents pages.
 * Its connections keep PostgreSQL's own choice between generic and custom plans, and have sorting off. On a generic
 * plan a page's 51 ids are "some ids": the planner, costing a probe of every id in every partition, read the key's
 * events between the ids' times instead (20 ms at 1,000,000 rows, against 51 primary-key probes on a custom plan;
 * without a key or subscription condition no such range exists, and the ids run on the generic plan, eventsById).
 * Before statistics exist it sorted every StreamEvents page across the daily partitions rather than merging their
 * index ranges in order and stopping at the page's end. With sorting off the ordered merge is the plan whatever the
 * estimates (none of these reads sorts its matching rows anywhere, so nothing loses a sort it needed).
 */
export const PLANNED_READS_POOL_SIZE = 4;

export function openPlannedReads(url: string, opts: DbOptions = {}): DelivererDb {
  return openDatabase(url, delivererSchema, { max: PLANNED_READS_POOL_SIZE, ...opts, settings: { enable_sort: "off", ...opts.settings } });
}
