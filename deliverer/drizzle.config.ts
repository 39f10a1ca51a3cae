import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  schema: "./deliverer/schema.ts",
  out: "./deliverer/migrations",
  migrations: { table: "__deliverer_migrations", schema: "public" },
});
