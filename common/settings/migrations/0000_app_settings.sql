-- Hand-edited from drizzle-kit's CREATE TABLE: IF NOT EXISTS, because databases set up before this migration
-- already hold the table (the services used to create it at run time) with exactly these columns.
CREATE TABLE IF NOT EXISTS "app_settings" (
	"name" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL
);
