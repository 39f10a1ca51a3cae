CREATE TABLE "watch_rematch_requests" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"chain_id" text NOT NULL,
	"head_from" bigint NOT NULL,
	"solid_from" bigint NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"done_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE INDEX "watch_rematch_requests_pending" ON "watch_rematch_requests" USING btree ("chain_id","id") WHERE done_at IS NULL;