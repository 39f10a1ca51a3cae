CREATE SEQUENCE "public"."watch_position_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
CREATE TABLE "watch_index_positions" (
	"chain_id" text NOT NULL,
	"shard" integer NOT NULL,
	"position" bigint NOT NULL,
	CONSTRAINT "watch_index_positions_chain_id_shard_pk" PRIMARY KEY("chain_id","shard")
);
--> statement-breakpoint
DROP INDEX "watch_outbox_chain_idx";--> statement-breakpoint
ALTER TABLE "watch_outbox" ADD COLUMN "applied_position" bigint;--> statement-breakpoint
ALTER TABLE "watch_outbox" ADD COLUMN "applied_at" timestamp (3) with time zone;--> statement-breakpoint
CREATE INDEX "watch_outbox_pending_idx" ON "watch_outbox" USING btree ("chain_id","id") WHERE "watch_outbox"."applied_position" IS NULL;--> statement-breakpoint
CREATE INDEX "watch_outbox_applied_idx" ON "watch_outbox" USING btree ("chain_id","applied_position") WHERE "watch_outbox"."applied_position" IS NOT NULL;