// A jsonb column that really stores the value. Bun SQL binds a string parameter to jsonb as a JSON *string*
// (drizzle's jsonb() then stores '"{...}"', which SQL's json functions see as a scalar), so the value goes through
// text explicitly.
import { sql } from "drizzle-orm";
import { customType } from "drizzle-orm/pg-core";

export function jsonb<T>() {
  return customType<{ data: T; driverData: unknown }>({
    dataType: () => "jsonb",
    toDriver: (value) => sql`${JSON.stringify(value)}::text::jsonb`,
    fromDriver: (value) => (typeof value === "string" ? JSON.parse(value) : value) as T,
  });
}
