import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  schema: "./common/settings/schema.ts",
  out: "./common/settings/migrations",
  migrations: { table: "__settings_migrations", schema: "public" },
});
