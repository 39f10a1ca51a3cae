// BackfillService: create, list, get and cancel a subscription's backfill jobs (docs/CONTRACT.md "Backfills").
// The registry owns the rows (registry/schema.ts `backfills`); the matcher runs them (matcher/backfill/). A job's range
// is resolved when it is created, against the chain's solidified head then (registry/backfill-range.ts).
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { and, desc, eq, inArray, lt, sql } from "drizzle-orm";
import { IdempotencyResultSchema } from "../gen/webhooks/common/v1/error_pb.ts";
import { BackfillResponseSchema, BackfillService, type BackfillResponse, type BackfillSchema } from "../gen/webhooks/registry/v1/backfill_pb.ts";
import type { BackfillConfig } from "../common/backfill-config.ts";
import { ApiError, invalidRequest, isChainId, notFound, TRON_CHAINS, type ChainId } from "../common/contract/index.ts";
import type { IdempotentOutcome } from "../common/idempotency.ts";
import { isId, newId } from "../common/ids.ts";
import type { TokenKeys } from "../common/keyring.ts";
import { decodePageToken, pageLimit, pageOf, type PageScope } from "../common/page-token.ts";
import { isBase58Address } from "../common/tron-address.ts";
import { backfills, subscriptionAddresses, type BackfillRow } from "./schema.ts";
import type { ChainView } from "./backfill-range.ts";
import { idempotentReplays } from "./metrics.ts";
import type { RegistryExecutor } from "./db/connection.ts";
import type { RegistryStore } from "./db/store.ts";
import { OPEN } from "./db/backfills.ts";

export interface BackfillContext {
  store: RegistryStore;
  tokenKeys: TokenKeys;
  chains: ChainView;
  limits: BackfillConfig;
}

type BackfillInit = MessageInitShape<typeof BackfillSchema>;

export function backfillMessage(row: BackfillRow): BackfillInit {
  const total = row.toBlock - row.fromBlock + 1;
  return {
    id: row.id,
    subscriptionId: row.subscriptionId,
    chainId: row.chainId,
    status: row.status,
    fromBlock: BigInt(row.fromBlock),
    toBlock: BigInt(row.toBlock),
    addresses: row.addressCount,
    blocksScanned: BigInt(Math.min(total, Math.max(0, row.nextBlock - row.fromBlock))),
    blocksTotal: BigInt(total),
    eventsCreated: BigInt(row.eventsCreated),
    eventsSkipped: BigInt(row.eventsSkipped),
    error: row.error ?? undefined,
    dateCreatedMs: BigInt(row.createdAt.getTime()),
    dateStartedMs: row.startedAt ? BigInt(row.startedAt.getTime()) : undefined,
    dateFinishedMs: row.finishedAt ? BigInt(row.finishedAt.getTime()) : undefined,
  };
}

interface Cursor {
  id: string;
}
function isCursor(value: unknown): value is Cursor {
  const c = value as Cursor | undefined;
  return typeof c === "object" && c !== null && typeof c.id === "string" && isId("bf", c.id);
}

function withReplay(outcome: IdempotentOutcome<BackfillResponse>): BackfillResponse {
  if (outcome.replayedFrom !== undefined) {
    idempotentReplays.inc();
    outcome.message.idempotency = create(IdempotencyResultSchema, { replayed: true, originalRequestId: outcome.replayedFrom });
  }
  return outcome.message;
}

/** The request's address subset, checked one by one: each must be base58check and watched on the chain. */
async function checkAddresses(ctx: BackfillContext, subscriptionId: string, chainId: string, given: readonly string[]): Promise<string[]> {
  if (given.length === 0) throw invalidRequest("addresses, when given, lists at least one address.", "/addresses");
  const unique = [...new Set(given)];
  given.forEach((a, i) => {
    if (!isBase58Address(a)) {
      throw new ApiError("invalid_address", `addresses[${i}] is not a base58check TRON address.`, { param: `/addresses/${i}`, index: i, input: a });
    }
  });
  const watched = new Set(
    (
      await ctx.store.run((db) =>
        db
          .select({ address: subscriptionAddresses.address })
          .from(subscriptionAddresses)
          .where(
            and(
              eq(subscriptionAddresses.subscriptionId, subscriptionId),
              eq(subscriptionAddresses.chainId, chainId),
              inArray(subscriptionAddresses.address, unique),
            ),
          ),
      )
    ).map((r) => r.address),
  );
  const missing = given.findIndex((a) => !watched.has(a));
  if (missing >= 0) throw invalidRequest(`addresses[${missing}] is not an address of this subscription on ${chainId}.`, `/addresses/${missing}`);
  return unique;
}

function watchedCount(ctx: BackfillContext, subscriptionId: string, chainId: string): Promise<number> {
  return ctx.store.run(async (db) => {
    const [row] = await db
      .select({ n: sql<number>`count(*)::int` })
      .from(subscriptionAddresses)
      .where(and(eq(subscriptionAddresses.subscriptionId, subscriptionId), eq(subscriptionAddresses.chainId, chainId)));
    return row?.n ?? 0;
  });
}

export function backfillService(ctx: BackfillContext): ServiceImpl<typeof BackfillService> {
  const { store } = ctx;

  async function ownedSubscription(keyId: string, id: string) {
    if (!isId("sub", id)) throw notFound("subscription");
    const row = await store.getSubscription(keyId, id);
    if (!row) throw notFound("subscription");
    return row;
  }

  async function findJob(keyId: string, subscriptionId: string, id: string): Promise<BackfillRow> {
    await ownedSubscription(keyId, subscriptionId);
    if (!isId("bf", id)) throw notFound("backfill");
    const [row] = await store.run((db) =>
      db
        .select()
        .from(backfills)
        .where(and(eq(backfills.id, id), eq(backfills.subscriptionId, subscriptionId), eq(backfills.keyId, keyId))),
    );
    if (!row) throw notFound("backfill");
    return row;
  }

  return {
    async createBackfill(req) {
      const sub = await ownedSubscription(req.keyId, req.subscriptionId);
      const scope = `POST /v1/subscriptions/${sub.id}/backfills`;
      const early = await store.peekIdempotent(BackfillResponseSchema, req.keyId, scope, req.idempotency);
      if (early) return withReplay(early);

      // The body's own checks first (no I/O), then the key's chains, the addresses, the subscription's state, and
      // last the node (the range).
      if (!isChainId(req.chainId)) {
        throw new ApiError("invalid_chain", `Unknown chain "${req.chainId}"; expected one of ${TRON_CHAINS.join(", ")}.`, { param: "/chainId" });
      }
      const chainId: ChainId = req.chainId;
      const byBlock = req.fromBlock !== undefined;
      if (byBlock === (req.sinceMs !== undefined)) throw invalidRequest("Give exactly one of fromBlock and since.", "/fromBlock");
      if (req.toBlock !== undefined && req.untilMs !== undefined) throw invalidRequest("Give at most one of toBlock and until.", "/until");
      const key = await store.getApiKey(req.keyId);
      if (!key?.chains.includes(chainId)) throw new ApiError("chain_not_enabled", `${chainId} is not enabled for this API key.`, { param: "/chainId" });
      const subset = req.addressesGiven ? await checkAddresses(ctx, sub.id, chainId, req.addresses) : null;
      const count = subset?.length ?? (await watchedCount(ctx, sub.id, chainId));
      if (count === 0) throw invalidRequest(`The subscription watches no address on ${chainId}.`, "/chainId");
      if (sub.status !== "enabled") throw new ApiError("subscription_disabled", "The subscription is disabled; enable it before backfilling.");

      const head = await ctx.chains.solidifiedHead(chainId);
      const fromParam = byBlock ? "/fromBlock" : "/since";
      const from = byBlock ? Number(req.fromBlock) : await ctx.chains.firstAtOrAfter(chainId, Number(req.sinceMs), head);
      if (from > head.number) throw invalidRequest(`${fromParam.slice(1)} is above the solidified head (block ${head.number}).`, fromParam);
      let to = head.number;
      let toParam = "/toBlock";
      if (req.toBlock !== undefined) to = Math.min(to, Number(req.toBlock));
      else if (req.untilMs !== undefined) {
        toParam = "/until";
        to = Math.min(to, (await ctx.chains.firstAtOrAfter(chainId, Number(req.untilMs) + 1, head)) - 1);
      }
      if (to < from) throw invalidRequest(`The range ends (block ${to}) before it starts (block ${from}).`, toParam);
      if (to - from + 1 > ctx.limits.maxBlocks) {
        throw invalidRequest(`The range holds ${to - from + 1} blocks; at most ${ctx.limits.maxBlocks} (BACKFILL_MAX_BLOCKS) per backfill.`, fromParam);
      }

      const outcome = await store.idempotent(BackfillResponseSchema, req.keyId, scope, req.idempotency, async (tx) => {
        const [row] = await tx
          .insert(backfills)
          .values({
            id: newId("bf"),
            subscriptionId: sub.id,
            keyId: req.keyId,
            chainId,
            status: "queued",
            fromBlock: from,
            toBlock: to,
            addresses: subset,
            addressCount: count,
            solidifiedHead: head.number,
            nextBlock: from,
            createdAt: new Date(),
          })
          .returning();
        return create(BackfillResponseSchema, { backfill: backfillMessage(row!) });
      });
      return withReplay(outcome);
    },

    async listBackfills(req) {
      await ownedSubscription(req.keyId, req.subscriptionId);
      const limit = pageLimit(req.limit);
      const scope: PageScope = { list: "backfills", keyId: req.keyId, parent: req.subscriptionId };
      const cursor = decodePageToken(ctx.tokenKeys, scope, req.pageToken, isCursor);
      // Ids are ULIDs: newest first is id order.
      const rows = await store.run((db) =>
        db
          .select()
          .from(backfills)
          .where(and(eq(backfills.subscriptionId, req.subscriptionId), cursor ? lt(backfills.id, cursor.id) : undefined))
          .orderBy(desc(backfills.id))
          .limit(limit + 1),
      );
      const page = pageOf(ctx.tokenKeys, scope, rows, limit, (last): Cursor => ({ id: last.id }));
      return { items: page.items.map(backfillMessage), nextPageToken: page.nextPageToken };
    },

    async getBackfill(req) {
      return { backfill: backfillMessage(await findJob(req.keyId, req.subscriptionId, req.id)) };
    },

    async cancelBackfill(req) {
      await findJob(req.keyId, req.subscriptionId, req.id);
      const scope = `POST /v1/subscriptions/${req.subscriptionId}/backfills/${req.id}/cancel`;
      const outcome = await store.idempotent(BackfillResponseSchema, req.keyId, scope, req.idempotency, async (tx) => {
        // A finished job is returned unchanged.
        const [canceled] = await tx
          .update(backfills)
          .set({ status: "canceled", finishedAt: new Date(), leaseOwner: null, leaseUntil: null })
          .where(and(eq(backfills.id, req.id), inArray(backfills.status, [...OPEN])))
          .returning();
        const row = canceled ?? (await tx.select().from(backfills).where(eq(backfills.id, req.id)))[0];
        if (!row) throw notFound("backfill");
        return create(BackfillResponseSchema, { backfill: backfillMessage(row) });
      });
      return withReplay(outcome);
    },
  };
}
