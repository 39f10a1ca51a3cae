// Statements built once per shape. Drizzle builds a statement's text from its query builder every time one runs:
// for the event reads of the API (a page, a search, one event by id) that building was the largest item in the
// stack's profile (bun --cpu-prof of `bun run bench events`, the txId phase: 45% of the samples under drizzle's
// select building). A read here is built once per shape (which of its filters are present) with placeholders,
// prepared, and afterwards only run with its values.
import { sql, type Placeholder, type SQLWrapper } from "drizzle-orm";

/**
 * A statement's value by name: a placeholder in the statement prepared once per shape, or the value itself as a
 * parameter when the statement is built to be read (its text for EXPLAIN). Both give the same text.
 */
export type Bind = (name: string) => SQLWrapper;

interface Buildable<R> {
  toSQL(): { sql: string; params: unknown[] };
  execute(): Promise<R[]>;
  prepare(name: string): { execute(values?: Record<string, unknown>): Promise<R[]> };
}

/** A statement of one shape with its values: its text, or its rows. */
export interface Statement<R> {
  toSQL(): { sql: string; params: unknown[] };
  execute(): Promise<R[]>;
}

/** Values as the driver takes them (what drizzle's column encoders make of them): timestamps as ISO text. */
function driverValues(values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) out[k] = v instanceof Date ? v.toISOString() : v;
  return out;
}

export class PreparedShapes {
  private readonly prepared = new Map<string, { execute(values?: Record<string, unknown>): Promise<unknown[]> }>();

  /**
   * The statement `build` makes for `values`. `shape` must name everything that changes the statement's text (which
   * conditions are present), never a value: the first build for a shape is kept and reused for every later one. A
   * shape that is not `kept` (one of too many to keep, e.g. an id list of a rare length) is built for each run.
   */
  statement<R>(shape: string, values: Record<string, unknown>, build: (p: Bind) => Buildable<R>, kept = true): Statement<R> {
    const literal = () => {
      const params = driverValues(values);
      return build((name) => sql.param(params[name]));
    };
    return {
      toSQL: () => literal().toSQL(),
      execute: () => {
        if (!kept) return literal().execute();
        let prepared = this.prepared.get(shape) as { execute(values?: Record<string, unknown>): Promise<R[]> } | undefined;
        if (!prepared) {
          prepared = build((name) => sql.placeholder(name)).prepare(shape);
          this.prepared.set(shape, prepared);
        }
        return prepared.execute(driverValues(values));
      },
    };
  }
}

/** A bound value as a LIMIT: drizzle's limit() is typed for placeholders, and builds any parameter the same way. */
export function asLimit(value: SQLWrapper): Placeholder {
  return value as Placeholder;
}
