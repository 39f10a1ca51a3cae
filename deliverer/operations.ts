// The delivery operations of the DeliveryService: an event's attempts, recover (re-queue every failed or delivered
// event of a time range), the search across all of a key's subscriptions, and a subscription's health. Each checks
// that the key owns the subscription itself (Shared.ownedTarget) before reading; the search is scoped to the key.
import { create } from "@bufbuild/protobuf";
import { createHash } from "node:crypto";
import {
  AttemptSchema,
  HealthResponseSchema,
  ListAttemptsResponseSchema,
  ListEventsResponseSchema,
  RecoverEventsResponseSchema,
  WindowStatsSchema,
  type GetHealthRequest,
  type ListAttemptsRequest,
  type RecoverEventsRequest,
  type RecoverEventsResponse,
  type SearchEventsRequest,
} from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import { IdempotencyResultSchema } from "../gen/webhooks/common/v1/error_pb.ts";
import {
  ApiError,
  CHAIN_CHOICES,
  EVENT_KINDS,
  RECOVER_MAX_AGE_MS,
  invalidRequest,
  isChainId,
  isEventKind,
  notFound,
} from "../common/contract/index.ts";
import { checkEventSearchFilters } from "../common/event-search.ts";
import { isId } from "../common/ids.ts";
import { isKeyed, type IdempotentOutcome } from "../common/idempotency.ts";
import { decodePageToken, encodePageToken, pageLimit, pageOf, type PageScope } from "../common/page-token.ts";
import { toEventView } from "./payload.ts";
import { afterEffect, beforeEffect, eventCursor, isPageCursor, scheduleUnavailable } from "./rpc-helpers.ts";
import { EVENT_STATUSES, type AttemptRow, type EventStatus } from "./schema.ts";
import type { DeliveryServiceDeps } from "./service-deps.ts";
import type { EventSearch, PageCursor } from "./db/types.ts";

/**
 * Events re-queued per statement: each batch is one short UPDATE, so no transaction lasts long. While a batch runs,
 * its UPDATE takes a core of PostgreSQL (it writes the five indexes of the delivery state of each event it changes)
 * and this event loop spends one uninterrupted stretch on its statements and its two Redis pipelines; every API
 * request in flight meanwhile waits, so the reads' p99 follows the length of one batch, not the recover's share of
 * the machine (resting as long as each batch took, instead of a quarter, left it where it was). With 2 cores, 1,000,000
 * events and a 100,000-event recover beside `GET /v1/events?txId=` (bench/events.ts, 2026-11-24, quiet): batches of
 * 500 took the reads' p99 from 6.3 to 17.2 ms (2.7×) and recovered in 6.3 s; batches of 100, 6.8 to 10.6 ms (1.6×)
 * in 10.1 s. Smaller ones cost a fixed share each (round trips, the commit), which the 30 s budget still covers.
 */
export const RECOVER_BATCH = 100;
/**
 * After each batch recover rests this share of the time the batch took, so that the reads get the machine to
 * themselves for a while between batches. A small share: the time goes onto the recover's 30 s budget (bench/events.ts;
 * on a crowded machine, load average 6–8, batches of 500 resting as long as they took needed 35 s).
 */
export const RECOVER_REST = 0.25;
/** How long a recover may hold its Idempotency-Key before another request may take it. */
const RECOVER_LOCK_MS = 10 * 60_000;

interface Shared {
  /** The subscription exists and belongs to the key (else not_found). */
  ownedTarget(keyId: string, subscriptionId: string): Promise<unknown>;
  /** The subscription exists, belongs to the key and is enabled (else not_found / subscription_disabled). */
  activeTarget(keyId: string, subscriptionId: string): Promise<unknown>;
  firstDueMs(): number;
}


function statusFilter(value: string, param: string): EventStatus | undefined {
  if (value === "") return undefined;
  if (!(EVENT_STATUSES as readonly string[]).includes(value)) throw invalidRequest(`status must be one of ${EVENT_STATUSES.join(", ")}.`, param);
  return value as EventStatus;
}

function toAttempt(a: AttemptRow) {
  return create(AttemptSchema, {
    id: a.id,
    dateMs: BigInt(a.attemptedAt.getTime()),
    durationMs: a.durationMs,
    responseStatus: a.responseStatus ?? undefined,
    responseBody: a.responseBody ?? undefined,
    error: a.error ?? undefined,
    trigger: a.trigger,
  });
}

function rate(w: { attempts: number; succeeded: number }) {
  return create(WindowStatsSchema, {
    attempts: BigInt(w.attempts),
    succeeded: BigInt(w.succeeded),
    successRate: w.attempts === 0 ? undefined : w.succeeded / w.attempts,
  });
}

export function operationHandlers(d: DeliveryServiceDeps, shared: Shared) {
  async function recover(req: RecoverEventsRequest, status: EventStatus, since: Date, until: Date): Promise<number> {
    await shared.activeTarget(req.keyId, req.subscriptionId);
    let total = 0;
    let after: PageCursor | undefined;
    for (;;) {
      const started = performance.now();
      const batch = await d.store.recoverCandidates(req.subscriptionId, status, since, until, after, RECOVER_BATCH);
      if (batch.length === 0) break;
      const ids = batch.map((b) => b.id);
      // Reserved before the update, as for retry: a crash between the commit and the schedule write loses nothing.
      await beforeEffect(() => d.schedule.reserve(ids, Date.now() + d.reserveMs));
      const due = shared.firstDueMs();
      const applied = await d.store.requeue(ids, status, new Date(due));
      await afterEffect(() => d.schedule.moveToDue(applied.map((id) => ({ id, dueMs: due }))));
      total += applied.length;
      if (applied.length > 0) d.wake();
      if (batch.length < RECOVER_BATCH) break;
      const last = batch[batch.length - 1]!;
      after = { t: last.t, id: last.id };
      await Bun.sleep((performance.now() - started) * RECOVER_REST);
    }
    return total;
  }

  function replayed(out: IdempotentOutcome<RecoverEventsResponse>): RecoverEventsResponse {
    if (!out.replayedFrom) return out.message;
    return create(RecoverEventsResponseSchema, {
      recovered: out.message.recovered,
      idempotency: create(IdempotencyResultSchema, { replayed: true, originalRequestId: out.replayedFrom }),
    });
  }

  return {
    async listAttempts(req: ListAttemptsRequest) {
      if (!isId("sub", req.subscriptionId) || !isId("evt", req.eventId)) throw notFound("event");
      const limit = pageLimit(req.limit);
      const scope: PageScope = { list: "attempts", keyId: req.keyId, parent: req.eventId };
      const cursor = decodePageToken(d.tokenKeys, scope, req.pageToken, isPageCursor);
      await shared.ownedTarget(req.keyId, req.subscriptionId);
      const event = await d.store.getEvent(req.subscriptionId, req.eventId);
      if (!event) throw notFound("event");
      const rows = await d.store.listAttempts(event, limit, cursor);
      const page = pageOf(d.tokenKeys, scope, rows, limit, (last): PageCursor => ({ t: last.attemptedAt.getTime(), id: last.id }));
      return create(ListAttemptsResponseSchema, { items: page.items.map(toAttempt), nextPageToken: page.nextPageToken });
    },

    async recoverEvents(req: RecoverEventsRequest) {
      if (!isId("sub", req.subscriptionId)) throw notFound("subscription");
      await shared.ownedTarget(req.keyId, req.subscriptionId);
      const status = statusFilter(req.status, "/status") ?? "failed";
      if (status === "pending") throw invalidRequest("status must be failed or delivered.", "/status");
      const now = Date.now();
      if (req.sinceMs < BigInt(now - RECOVER_MAX_AGE_MS)) throw invalidRequest(`since must be at most ${RECOVER_MAX_AGE_MS / 86_400_000} days ago.`, "/since");
      const since = new Date(Number(req.sinceMs));
      const until = new Date(req.untilMs === undefined ? now : Number(req.untilMs));
      // With until left to default, a future since is the mistake (not the until nobody sent).
      if (req.untilMs === undefined && since.getTime() >= now) throw invalidRequest("since must be in the past.", "/since");
      if (until.getTime() <= since.getTime()) throw invalidRequest("until must be after since.", "/until");
      const scope = `POST /v1/subscriptions/${req.subscriptionId}/events/recover`;
      const idem = req.idempotency;
      if (!isKeyed(idem)) return create(RecoverEventsResponseSchema, { recovered: BigInt(await recover(req, status, since, until)) });
      // Too long for one transaction: the key is held in Redis while the batches run, and the record is written
      // when they are done. A recover interrupted half-way is simply run again: what it re-queued already is no
      // longer failed (or delivered), so the rerun takes only the rest.
      const done = await d.store.findIdempotent(RecoverEventsResponseSchema, req.keyId, scope, idem);
      if (done) return replayed(done);
      const lock = `recover:${createHash("sha256").update(`${req.keyId}\n${scope}\n${idem.key}`).digest("hex")}`;
      let locked: boolean;
      try {
        locked = await d.schedule.tryLock(lock, RECOVER_LOCK_MS);
      } catch {
        throw scheduleUnavailable();
      }
      if (!locked) {
        throw new ApiError("idempotency_in_flight", "A request with this Idempotency-Key is still being processed; retry shortly.");
      }
      try {
        const recovered = await recover(req, status, since, until);
        const out = await d.store.recordIdempotent(RecoverEventsResponseSchema, req.keyId, scope, idem,
          create(RecoverEventsResponseSchema, { recovered: BigInt(recovered) }));
        return replayed(out);
      } finally {
        await d.schedule.unlock(lock).catch(() => {});
      }
    },

    async searchEvents(req: SearchEventsRequest) {
      const limit = pageLimit(req.limit);
      if (req.subscriptionId !== "" && !isId("sub", req.subscriptionId)) throw notFound("subscription");
      if (req.chainId !== "" && !isChainId(req.chainId)) throw invalidRequest(`chainId must be ${CHAIN_CHOICES}.`, "chainId");
      if (req.kind !== "" && !isEventKind(req.kind)) throw invalidRequest(`kind must be one of ${EVENT_KINDS.join(", ")}.`, "kind");
      if (req.sinceMs !== undefined && req.untilMs !== undefined && req.untilMs <= req.sinceMs) throw invalidRequest("until must be after since.", "until");
      const { txId, address } = checkEventSearchFilters(req);
      const q: EventSearch = {
        keyId: req.keyId,
        subscriptionId: req.subscriptionId || undefined,
        txId: txId || undefined,
        address: address || undefined,
        chainId: req.chainId || undefined,
        kind: req.kind || undefined,
        status: statusFilter(req.status, "status"),
        since: req.sinceMs === undefined ? undefined : new Date(Number(req.sinceMs)),
        until: req.untilMs === undefined ? undefined : new Date(Number(req.untilMs)),
      };
      // The page token is bound to the filters: a token of another filter set is another list.
      const { keyId: _k, ...filters } = q;
      const scope: PageScope = { list: `events:search:${JSON.stringify(filters)}`, keyId: req.keyId, parent: "" };
      const cursor = decodePageToken(d.tokenKeys, scope, req.pageToken, isPageCursor);
      const { rows, resumeAfter } = await d.store.searchEvents(q, limit, cursor);
      const page = resumeAfter
        ? { items: rows, nextPageToken: encodePageToken(d.tokenKeys, scope, resumeAfter) }
        : pageOf(d.tokenKeys, scope, rows, limit, eventCursor);
      return create(ListEventsResponseSchema, { items: page.items.map(toEventView), nextPageToken: page.nextPageToken });
    },

    async getHealth(req: GetHealthRequest) {
      if (!isId("sub", req.subscriptionId)) throw notFound("subscription");
      await shared.ownedTarget(req.keyId, req.subscriptionId);
      const h = await d.store.health(req.subscriptionId, new Date());
      return create(HealthResponseSchema, {
        lastHour: rate(h.hour),
        last24h: rate(h.day),
        lastSuccessMs: h.lastSuccess ? BigInt(h.lastSuccess.getTime()) : undefined,
        lastFailureMs: h.lastFailure ? BigInt(h.lastFailure.at.getTime()) : undefined,
        lastFailureReason: h.lastFailure?.reason,
        consecutiveFailures: BigInt(h.consecutiveFailures),
        p50DurationMs: h.p50 ?? undefined,
        p99DurationMs: h.p99 ?? undefined,
        pending: BigInt(h.pending),
        hourlySuccessRate: h.hourly,
      });
    },
  };
}
