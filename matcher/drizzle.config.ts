import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  schema: "./matcher/schema.ts",
  out: "./matcher/migrations",
  migrations: { table: "__matcher_migrations", schema: "public" },
});
