// Backfill jobs as the subscriptions' writes see them: disabling a subscription cancels its open jobs in the same
// transaction (the jobs' API is registry/backfills.ts).
import { and, eq, inArray } from "drizzle-orm";
import { backfills } from "../schema.ts";
import type { RegistryExecutor } from "./connection.ts";

/** The states of a job that has not finished. */
export const OPEN = ["queued", "running"] as const;

/**
 * Cancels the subscription's open jobs inside `tx` (the transaction that disables it), with `error` saying why; the
 * matcher sees the status at its next checkpoint and stops.
 */
export async function cancelSubscriptionBackfills(tx: RegistryExecutor, subscriptionId: string, error: string): Promise<void> {
  await tx
    .update(backfills)
    .set({ status: "canceled", error, finishedAt: new Date(), leaseOwner: null, leaseUntil: null })
    .where(and(eq(backfills.subscriptionId, subscriptionId), inArray(backfills.status, [...OPEN])));
}
