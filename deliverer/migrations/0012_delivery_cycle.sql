-- The delivery cycle's number (schema.ts event_deliveries.cycle): an outcome applies only in the cycle its claim
-- read. A constant default: no partition is rewritten.
ALTER TABLE "event_deliveries" ADD COLUMN "cycle" integer DEFAULT 0 NOT NULL;