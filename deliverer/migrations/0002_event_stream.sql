ALTER TABLE "events" ADD COLUMN "key_id" text;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "xid" "xid8" DEFAULT pg_current_xact_id() NOT NULL;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "seq" bigint NOT NULL GENERATED ALWAYS AS IDENTITY (sequence name "events_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1);--> statement-breakpoint
CREATE INDEX "events_stream_idx" ON "events" USING btree ("key_id","xid","seq");