-- The transfer identity gains the event kind and the internal-transaction index. Existing rows keep their ids and
-- get internal_index -1 (every event made before had none); the new unique index is built before the old one goes.
ALTER TABLE "events" ADD COLUMN "internal_index" integer DEFAULT -1 NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "events_transfer_kind_uq" ON "events" USING btree ("subscription_id","kind","chain_id","tx_id","log_index","internal_index");--> statement-breakpoint
DROP INDEX "events_transfer_uq";
