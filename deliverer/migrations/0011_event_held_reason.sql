-- Why a held event is held (common/hold-reasons.ts): shown in its view. Nullable and without a default, so adding
-- it to the partitioned table rewrites no partition; rows held before it get their reason from the next held check.
ALTER TABLE "event_deliveries" ADD COLUMN "held_reason" text;
