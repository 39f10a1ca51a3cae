// Statements built once per shape. Drizzle builds a statement's text from its query builder every time one runs:
// for the event reads of the API (a page, a search, one event by id) that building was the largest item in the
// stack's profile (bun --cpu-prof of `bun run bench events`, the txId phase: 45% of the samples under drizzle's
// select building). A read here is built once per shape (which of its filters are present) with placeholders,
// prepared, and afterwards only run with its values. Its rows are mapped by a mapper made once per shape from the
// statement's flat selection: drizzle's own mapping (mapResultRow) looks up each field's kind and decoder again for
// every value of every row, 29% of the stack's samples for a 50-event address page (the busy-address phase).
import type { SQL as Client } from "bun";
import { fillPlaceholders, sql, type Column, type Placeholder, type SQLWrapper } from "drizzle-orm";

/**
 * A statement's value by name: a placeholder in the statement prepared once per shape, or the value itself as a
 * parameter when the statement is built to be read (its text for EXPLAIN). Both give the same text.
 */
export type Bind = (name: string) => SQLWrapper;

interface Buildable<R> {
  toSQL(): { sql: string; params: unknown[] };
  execute(): Promise<R[]>;
}

/** A statement of one shape with its values: its text, or its rows. */
export interface Statement<R> {
  toSQL(): { sql: string; params: unknown[] };
  execute(): Promise<R[]>;
}

/**
 * What a statement selects, flat, by the names its rows carry: drizzle lists a selection's fields in its key order,
 * which is the order of the values in each row the driver returns.
 */
export type Fields = Record<string, Column>;

/** Where a statement runs, and what it selects. */
export interface Target {
  /** The pool's driver (the drizzle database's $client). */
  client: Client;
  fields: Fields;
}

/** Values as the driver takes them (what drizzle's column encoders make of them): timestamps as ISO text. */
function driverValues(values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) out[k] = v instanceof Date ? v.toISOString() : v;
  return out;
}

type Decode = (value: unknown) => unknown;

/** A row's values in select-list order to an object by field name, each value through its field's decoder. */
function rowMapper(fields: Fields): (row: unknown[]) => Record<string, unknown> {
  const names = Object.keys(fields);
  const decoders: Decode[] = names.map((name) => {
    const column = fields[name]!;
    return (v) => column.mapFromDriverValue(v);
  });
  return (row) => {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) {
      const v = row[i];
      out[names[i]!] = v === null ? null : decoders[i]!(v);
    }
    return out;
  };
}

interface Kept {
  text: string;
  params: unknown[];
  map: (row: unknown[]) => Record<string, unknown>;
}

export class PreparedShapes {
  private readonly kept = new Map<string, Kept>();

  /**
   * The statement `build` makes for `values`, run on `target.client`; `build` must select exactly `target.fields`.
   * `shape` must name everything that changes the statement's text (which conditions are present), never a value:
   * the first build for a shape is kept and reused for every later one. A shape that is not `kept` (one of too many
   * to keep, e.g. an id list of a rare length) is built for each run.
   */
  statement<R>(shape: string, values: Record<string, unknown>, target: Target, build: (p: Bind) => Buildable<R>, kept = true): Statement<R> {
    const literal = () => {
      const params = driverValues(values);
      return build((name) => sql.param(params[name]));
    };
    return {
      toSQL: () => literal().toSQL(),
      execute: async () => {
        if (!kept) return literal().execute();
        let statement = this.kept.get(shape);
        if (!statement) {
          const { sql: text, params } = build((name) => sql.placeholder(name)).toSQL();
          statement = { text, params, map: rowMapper(target.fields) };
          this.kept.set(shape, statement);
        }
        // Bun's driver prepares a statement with parameters once per connection and then only binds and runs it.
        const rows = (await target.client.unsafe(statement.text, fillPlaceholders(statement.params, driverValues(values))).values()) as unknown[][];
        return rows.map(statement.map) as R[];
      },
    };
  }
}

/** A bound value as a LIMIT: drizzle's limit() is typed for placeholders, and builds any parameter the same way. */
export function asLimit(value: SQLWrapper): Placeholder {
  return value as Placeholder;
}
