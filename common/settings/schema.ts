// app_settings: values generated once and shared by every service on the database (APP_SECRET and INTERNAL_TOKEN
// when the environment gives none, common/app-secret.ts). Every service that reads it runs these migrations (their
// own journal, __settings_migrations) when it opens its database.
import { pgTable, text } from "drizzle-orm/pg-core";

export const appSettings = pgTable("app_settings", {
  name: text("name").primaryKey(),
  value: text("value").notNull(),
});
