import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";

/** A pool or an open transaction of any service's Drizzle database. */
export type Executor = PgDatabase<PgQueryResultHKT, Record<string, unknown>>;
