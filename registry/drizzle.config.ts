import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  schema: "./registry/schema.ts",
  out: "./registry/migrations",
  migrations: { table: "__registry_migrations", schema: "public" },
});
