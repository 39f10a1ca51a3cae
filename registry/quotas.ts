// The registry's side of the per-key quotas (common/quotas.ts): a key's overrides as stored in api_keys, and the
// subscription and address caps checked inside the writing transaction. A write that grows a count takes the key's
// row lock first (FOR NO KEY UPDATE, which leaves the subscriptions' foreign-key checks free), so two writes of one
// key cannot both pass the last free place.
import { sql as dsql } from "drizzle-orm";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { quotaExceeded, quotaLimit, type QuotaLimits, type QuotaOverrides } from "../common/quotas.ts";
import type { KeyQuotasSchema } from "../gen/webhooks/registry/v1/registry_pb.ts";
import type { ApiKeyRow } from "./schema.ts";
import type { RegistryExecutor } from "./db/connection.ts";

type QuotaColumns = Pick<ApiKeyRow, "quotaSubscriptions" | "quotaAddresses" | "quotaDeliveries" | "quotaStreams">;

/** A key's stored overrides (null columns are the defaults). */
export function keyOverrides(row: QuotaColumns): QuotaOverrides {
  const out: QuotaOverrides = {};
  if (row.quotaSubscriptions !== null) out.subscriptions = row.quotaSubscriptions;
  if (row.quotaAddresses !== null) out.addresses = row.quotaAddresses;
  if (row.quotaDeliveries !== null) out.deliveries = row.quotaDeliveries;
  if (row.quotaStreams !== null) out.streams = row.quotaStreams;
  return out;
}

/** The columns that store `overrides` exactly (an absent quota is null: the default). */
export function overrideColumns(overrides: QuotaOverrides): QuotaColumns {
  return {
    quotaSubscriptions: overrides.subscriptions ?? null,
    quotaAddresses: overrides.addresses ?? null,
    quotaDeliveries: overrides.deliveries ?? null,
    quotaStreams: overrides.streams ?? null,
  };
}

/** The overrides as the ApiKey message carries them. */
export function quotasMessage(row: QuotaColumns): MessageInitShape<typeof KeyQuotasSchema> {
  return keyOverrides(row);
}

/** Locks the key's row for a write that may grow its counts; returns its overrides (none for an unknown key). */
async function lockKey(tx: RegistryExecutor, keyId: string): Promise<QuotaOverrides> {
  const rows = (await tx.execute(dsql`
    SELECT quota_subscriptions AS "quotaSubscriptions", quota_addresses AS "quotaAddresses",
           quota_deliveries AS "quotaDeliveries", quota_streams AS "quotaStreams"
    FROM api_keys WHERE id = ${keyId} FOR NO KEY UPDATE`)) as unknown as QuotaColumns[];
  return rows[0] ? keyOverrides(rows[0]) : {};
}

/** Throws quota_exceeded when the key already has as many subscriptions as its quota allows. */
export async function checkSubscriptionQuota(tx: RegistryExecutor, keyId: string, defaults: QuotaLimits): Promise<void> {
  const limit = quotaLimit("subscriptions", await lockKey(tx, keyId), defaults);
  const [row] = (await tx.execute(dsql`SELECT count(*)::int AS n FROM subscriptions WHERE key_id = ${keyId}`)) as unknown as { n: number }[];
  if (row!.n >= limit) throw quotaExceeded("subscriptions", limit);
}

/**
 * Throws quota_exceeded when the key's address entries, with `subscriptionId` at `count` (after the change), would
 * pass its quota. Called only for a change that grows the subscription's count: a removal always passes.
 */
export async function checkAddressQuota(
  tx: RegistryExecutor,
  keyId: string,
  subscriptionId: string,
  count: number,
  defaults: QuotaLimits,
): Promise<void> {
  const limit = quotaLimit("addresses", await lockKey(tx, keyId), defaults);
  if (count > limit) throw quotaExceeded("addresses", limit);
  const [row] = (await tx.execute(dsql`
    SELECT coalesce(sum(address_count), 0)::bigint AS n FROM subscriptions
    WHERE key_id = ${keyId} AND id <> ${subscriptionId}`)) as unknown as { n: string | number }[];
  if (Number(row!.n) + count > limit) throw quotaExceeded("addresses", limit);
}
