// What the backfill routes share: the job's JSON (docs/CONTRACT.md "Backfills"), the path parameters, the registry
// client. Each operation is a file of its own beside this one, listed in gateway/routes/index.ts.
import { createClient, type Client } from "@connectrpc/connect";
import { t, type Static } from "elysia";
import { ApiError } from "../../../common/contract/index.ts";
import { BackfillService, type Backfill } from "../../../gen/webhooks/registry/v1/backfill_pb.ts";
import type { GatewayDeps } from "../../deps.ts";
import { isoTime } from "../../render.ts";
import { SubscriptionIdParams } from "../../schemas.ts";

export const TAGS = ["backfills"];

export const BackfillSchema = t.Object(
  {
    id: t.String({ description: "bf_ + ULID." }),
    subscriptionId: t.String(),
    chainId: t.String(),
    status: t.Union([t.Literal("queued"), t.Literal("running"), t.Literal("completed"), t.Literal("failed"), t.Literal("canceled")], {
      description: "queued until one of the key's BACKFILL_CONCURRENCY_PER_KEY places is free, then running, then completed, failed or canceled.",
    }),
    fromBlock: t.Integer({ description: "First block scanned." }),
    toBlock: t.Integer({ description: "Last block scanned (at most the solidified head when the job was created)." }),
    addresses: t.Integer({ description: "How many of the subscription's addresses the job scans for." }),
    progress: t.Object({
      blocksScanned: t.Integer(),
      blocksTotal: t.Integer(),
      eventsCreated: t.Integer({ description: "Events the job made." }),
      eventsSkipped: t.Integer({ description: "Events the subscription already had for that (kind, transfer), live or from another job." }),
    }),
    error: t.Union([t.String(), t.Null()], { description: "Why it failed, or `subscription disabled` when disabling the subscription canceled it." }),
    dateCreated: t.String({ format: "date-time" }),
    dateStarted: t.Union([t.String({ format: "date-time" }), t.Null()]),
    dateFinished: t.Union([t.String({ format: "date-time" }), t.Null()]),
  },
  { title: "Backfill" },
);
export type BackfillJson = Static<typeof BackfillSchema>;

export const BackfillPageSchema = t.Object(
  { items: t.Array(BackfillSchema), nextPageToken: t.Optional(t.String({ description: "Absent on the last page." })) },
  { title: "BackfillPage" },
);

export const BackfillParams = t.Object({
  id: SubscriptionIdParams.properties.id,
  backfillId: t.String({ pattern: "^bf_[0-9A-HJKMNP-TV-Z]{26}$", description: "Backfill id (bf_ + ULID). A malformed id is not_found." }),
});

export function renderBackfill(b: Backfill | undefined): BackfillJson {
  // The registry always answers with the job; its absence is a broken dependency, not the caller's fault.
  if (!b) throw new ApiError("internal_error", "An unexpected error occurred.");
  return {
    id: b.id,
    subscriptionId: b.subscriptionId,
    chainId: b.chainId,
    status: b.status as BackfillJson["status"],
    fromBlock: Number(b.fromBlock),
    toBlock: Number(b.toBlock),
    addresses: b.addresses,
    progress: {
      blocksScanned: Number(b.blocksScanned),
      blocksTotal: Number(b.blocksTotal),
      eventsCreated: Number(b.eventsCreated),
      eventsSkipped: Number(b.eventsSkipped),
    },
    error: b.error ?? null,
    dateCreated: isoTime(b.dateCreatedMs),
    dateStarted: b.dateStartedMs === undefined ? null : isoTime(b.dateStartedMs),
    dateFinished: b.dateFinishedMs === undefined ? null : isoTime(b.dateFinishedMs),
  };
}

export function backfillClient(deps: GatewayDeps): Client<typeof BackfillService> {
  return createClient(BackfillService, deps.registry);
}
