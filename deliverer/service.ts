// The DeliveryService RPC handlers: Enqueue for the matcher, and the public event operations for the gateway. The
// gateway checks that the API key owns the subscription, and so does every handler here (ownedTarget, against the
// registry's record), so a caller naming another key's subscription finds nothing. Handlers throw ApiError.
import { create } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import {
  DeliveryService,
  DeleteSubscriptionEventsResponseSchema,
  EnqueueResponseSchema,
  EventResponseSchema,
  ListEventsResponseSchema,
  type EnqueueRequest,
  type EventResponse,
  type NewEvent,
} from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import { IdempotencyResultSchema } from "../gen/webhooks/common/v1/error_pb.ts";
import {
  ACTIVITY_KINDS,
  ApiError,
  BLACKLIST_TYPES,
  EVENT_KINDS,
  FAILED,
  PING,
  RESOURCE_MOVE_TYPES,
  RESOURCE_NAMES,
  TRANSFER_KINDS,
  familyOf,
  invalidRequest,
  isActivityKind,
  isChainId,
  isEventKind,
  isTransferKind,
  notFound,
  type ActivityKind,
} from "../common/contract/index.ts";
import { firstDelay } from "../common/retry-policy.ts";
import { afterEffect, beforeEffect, eventCursor, isPageCursor } from "./rpc-helpers.ts";
import { operationHandlers } from "./operations.ts";
import { isId, newId } from "../common/ids.ts";
import { isBase58Address } from "../common/tron-address.ts";
import { decodePageToken, pageLimit, pageOf, type PageScope } from "../common/page-token.ts";
import { EVENT_STATUSES, type EventStatus, type NewEventRow } from "./schema.ts";
import type { IdempotentOutcome } from "../common/idempotency.ts";
import { transferKey } from "./db/enqueue.ts";
import { holdReason } from "./targets.ts";
import { eventsHeld } from "./metrics.ts";
import { activityData, envelope, renderPayload, toEventView, transferData } from "./payload.ts";
import { testEventSample } from "./samples.ts";
import { activityAddresses, transferAddresses } from "./search-refs.ts";
import type { DeliveryServiceDeps } from "./service-deps.ts";

/** Events a DeleteSubscriptionEvents call deletes itself before leaving the rest to the background purge. */
const PURGE_INLINE_BATCH = 1_000;
/** Rows written per statement; a bigger Enqueue is written in several (each idempotent on its own). */
const INSERT_CHUNK = 2_000;

/**
 * A matcher's event as Enqueue checks it: a transfer kind with its transfer, or an activity kind with its activity,
 * whose detail is the kind's family; invalid_request otherwise (the whole call changes nothing).
 */
function checkNewEvent(e: NewEvent, i: number): void {
  if (!isId("sub", e.subscriptionId)) throw invalidRequest("subscription_id is not a subscription id.", `/events/${i}/subscriptionId`);
  if (isTransferKind(e.kind)) {
    const t = e.transfer;
    if (!t || !isChainId(t.chainId) || t.txId === "") throw invalidRequest("transfer needs a known chain and a txId.", `/events/${i}/transfer`);
    if (e.kind === FAILED && t.reason === "") throw invalidRequest("A failed transfer needs its reason.", `/events/${i}/transfer/reason`);
    return;
  }
  if (!isActivityKind(e.kind)) {
    throw invalidRequest(`Only ${[...TRANSFER_KINDS, ...ACTIVITY_KINDS].join(", ")} events are enqueued.`, `/events/${i}/kind`);
  }
  const a = e.activity;
  if (!a || !isChainId(a.chainId) || a.txId === "") throw invalidRequest("activity needs a known chain and a txId.", `/events/${i}/activity`);
  const family = familyOf(e.kind);
  if (a.detail.case !== family) throw invalidRequest(`A ${e.kind} event needs activity.${family}.`, `/events/${i}/activity/${family}`);
  const d = a.detail;
  // What the payload cannot be rendered without: the token of an approval or a blacklist, the owner permission.
  if ((d.case === "approval" || d.case === "blacklist") && !d.value.asset?.contract) {
    throw invalidRequest(`A ${family} needs its token's asset with its contract.`, `/events/${i}/activity/${family}/asset`);
  }
  if (d.case === "approval" && !/^[0-9]+$/.test(d.value.amount)) {
    throw invalidRequest("An approval's amount is a decimal string.", `/events/${i}/activity/approval/amount`);
  }
  if (d.case === "permission" && !d.value.owner) {
    throw invalidRequest("A permission update needs its owner permission.", `/events/${i}/activity/permission/owner`);
  }
  // The types the contract lists (the OpenAPI schema's literals): a new one is a contract change, not a matcher's whim.
  if (d.case === "resource" && !(RESOURCE_MOVE_TYPES as readonly string[]).includes(d.value.type)) {
    throw invalidRequest(`A resource move's type is one of ${RESOURCE_MOVE_TYPES.join(", ")}.`, `/events/${i}/activity/resource/type`);
  }
  // Who moved the resources: matchedAddresses names only watched addresses, so the payload's owner is the one place
  // a subscription watching a delegation's receiver learns the delegator.
  if (d.case === "resource" && !isBase58Address(d.value.owner)) {
    throw invalidRequest("A resource move needs its owner, a base58check address.", `/events/${i}/activity/resource/owner`);
  }
  if (d.case === "resource" && d.value.resource !== undefined && !(RESOURCE_NAMES as readonly string[]).includes(d.value.resource)) {
    throw invalidRequest(`A resource is one of ${RESOURCE_NAMES.join(", ")}.`, `/events/${i}/activity/resource/resource`);
  }
  if (d.case === "blacklist" && !(BLACKLIST_TYPES as readonly string[]).includes(d.value.type)) {
    throw invalidRequest(`A blacklist event's type is one of ${BLACKLIST_TYPES.join(", ")}.`, `/events/${i}/activity/blacklist/type`);
  }
}

/** What a new event's row is identified and found by, and its data, for a transfer or an activity (checked before). */
function eventFields(e: NewEvent) {
  if (e.transfer && isTransferKind(e.kind)) {
    const t = e.transfer;
    return {
      chainId: t.chainId, txId: t.txId, logIndex: t.logIndex, internalIndex: t.internalIndex,
      addresses: transferAddresses(t.from, t.to),
      data: transferData(t, e.kind, e.backfill ?? null),
    };
  }
  const a = e.activity!;
  // An activity's identity is (chainId, txId, logIndex) and its family, which the kind carries; it has no internal index.
  return {
    chainId: a.chainId, txId: a.txId, logIndex: a.logIndex, internalIndex: -1,
    addresses: activityAddresses(a),
    data: activityData(a, e.kind as ActivityKind, e.backfill ?? null),
  };
}

function withIdempotency(out: IdempotentOutcome<EventResponse>): EventResponse {
  if (!out.replayedFrom) return out.message;
  return create(EventResponseSchema, {
    event: out.message.event,
    idempotency: create(IdempotencyResultSchema, { replayed: true, originalRequestId: out.replayedFrom }),
  });
}

export function deliveryRoutes(d: DeliveryServiceDeps) {
  const firstDueMs = () => Date.now() + firstDelay(d.retrySchedule);

  /**
   * After a test event or a retry committed: its reservation becomes due now and the worker wakes (a replayed
   * answer changed nothing, so nothing is scheduled); then the answer, marked when it was replayed.
   */
  async function dueNow(out: IdempotentOutcome<EventResponse>, scheduled: string | undefined): Promise<EventResponse> {
    if (scheduled && !out.replayedFrom) {
      await afterEffect(() => d.schedule.moveToDue([{ id: scheduled, dueMs: firstDueMs() }]));
      d.wake();
    }
    return withIdempotency(out);
  }

  async function enqueue(req: EnqueueRequest) {
    req.events.forEach(checkNewEvent);
    // No events for a subscription that is gone, disabled or whose key is revoked (docs/CONTRACT.md). One whose
    // secret cannot be read gets its events, held (out of the schedule) until the secret reads again: the block
    // is not refused for it, so every other subscription's events go on.
    const targets = await d.targets.get(req.events.map((e) => e.subscriptionId));
    const now = new Date();
    const rows: NewEventRow[] = [];
    const keyOf: (string | undefined)[] = Array.from({ length: req.events.length }, () => undefined);
    const seen = new Map<string, string>();
    req.events.forEach((e, i) => {
      const target = targets.get(e.subscriptionId);
      if (!target?.exists || !target.active) return;
      const heldReason = holdReason(target);
      const f = eventFields(e);
      const key = transferKey(e.subscriptionId, e.kind, f.chainId, f.txId, f.logIndex, f.internalIndex);
      keyOf[i] = key;
      if (seen.has(key)) return;
      const id = newId("evt");
      seen.set(key, id);
      rows.push({
        id,
        subscriptionId: e.subscriptionId,
        keyId: target.keyId,
        addresses: f.addresses,
        kind: e.kind,
        chainId: f.chainId,
        txId: f.txId,
        logIndex: f.logIndex,
        internalIndex: f.internalIndex,
        payload: renderPayload(envelope(id, e.kind, e.subscriptionId, now, f.data)),
        status: "pending",
        nextAttemptAt: new Date(firstDueMs()),
        held: heldReason !== undefined,
        heldReason,
        createdAt: now,
        updatedAt: now,
      });
    });
    const idByKey = new Map<string, string>();
    const insertedIds = new Set<string>();
    let created = 0;
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      const chunk = rows.slice(i, i + INSERT_CHUNK);
      // Held events stay out of the schedule (resumeHeld puts them in once their target reads again).
      const ids = chunk.filter((r) => !r.held).map((r) => r.id!);
      // Reserved before the insert: if this process dies between the commit and the schedule update, the
      // reservation expires and the events are claimed anyway.
      await beforeEffect(() => d.schedule.reserve(ids, Date.now() + d.reserveMs));
      const out = await d.store.insertTransferEvents(chunk);
      const due = firstDueMs();
      await afterEffect(() => d.schedule.moveToDue(ids.filter((id) => out.inserted.has(id)).map((id) => ({ id, dueMs: due }))));
      await afterEffect(() => d.schedule.remove(ids.filter((id) => !out.inserted.has(id))));
      for (const r of chunk) if (r.held && out.inserted.has(r.id!)) eventsHeld.inc({ reason: r.heldReason! });
      for (const [k, v] of out.idByKey) idByKey.set(k, v);
      for (const id of out.inserted) insertedIds.add(id);
      created += out.inserted.size;
    }
    if (created > 0) d.wake();
    const eventIds = keyOf.map((k) => (k === undefined ? "" : (idByKey.get(k) ?? "")));
    return create(EnqueueResponseSchema, {
      eventIds,
      created,
      // Only the first input of an identity the call created is "made"; a repeat within the call is a duplicate.
      made: eventIds.map((id) => insertedIds.delete(id)),
    });
  }

  /**
   * The subscription's target when it exists and belongs to `keyId`; not_found otherwise, exactly as for a missing
   * one. Cached reads are fine for the owner: a subscription never changes keys.
   */
  async function ownedTarget(keyId: string, subscriptionId: string, fresh = false) {
    if (!isId("sub", subscriptionId)) throw notFound("subscription");
    const target = (await d.targets.get([subscriptionId], fresh)).get(subscriptionId);
    if (!target?.exists || target.keyId === "" || target.keyId !== keyId) throw notFound("subscription");
    return target;
  }

  async function activeTarget(keyId: string, subscriptionId: string) {
    const target = await ownedTarget(keyId, subscriptionId, true);
    if (!target.active) {
      throw new ApiError("subscription_disabled", "The subscription is disabled; enable it before sending or retrying events.");
    }
    return target;
  }

  return (router: ConnectRouter) => {
    router.service(DeliveryService, {
      enqueue,
      ...operationHandlers(d, { ownedTarget, activeTarget, firstDueMs }),

      streamEvents: d.streamEvents,

      async createTestEvent(req) {
        if (!isId("sub", req.subscriptionId)) throw notFound("subscription");
        const kind = req.kind === "" ? PING : req.kind;
        if (!isEventKind(kind)) throw new ApiError("unsupported_event", `Test events are ${EVENT_KINDS.join(", ")}.`, { event: req.kind });
        let scheduled: string | undefined;
        const out = await d.store.idempotent(
          EventResponseSchema,
          req.keyId,
          `POST /v1/subscriptions/${req.subscriptionId}/test`,
          req.idempotency,
          async (tx) => {
            const target = await activeTarget(req.keyId, req.subscriptionId);
            const id = newId("evt");
            const now = new Date();
            const sample = testEventSample(kind, target.chains, now);
            await beforeEffect(() => d.schedule.reserve([id], Date.now() + d.reserveMs));
            const row = await d.store.insertEvent(tx, {
              id,
              subscriptionId: req.subscriptionId,
              keyId: target.keyId,
              addresses: sample.addresses,
              kind,
              chainId: sample.chainId,
              txId: sample.txId,
              logIndex: sample.logIndex,
              payload: renderPayload(envelope(id, kind, req.subscriptionId, now, sample.data)),
              status: "pending",
              nextAttemptAt: new Date(firstDueMs()),
              createdAt: now,
              updatedAt: now,
            });
            scheduled = row.id;
            return create(EventResponseSchema, { event: toEventView(row) });
          },
        );
        return dueNow(out, scheduled);
      },

      async listEvents(req) {
        if (!isId("sub", req.subscriptionId)) throw notFound("subscription");
        const limit = pageLimit(req.limit);
        let status: EventStatus | undefined;
        if (req.status !== "") {
          if (!(EVENT_STATUSES as readonly string[]).includes(req.status)) {
            throw invalidRequest(`status must be one of ${EVENT_STATUSES.join(", ")}.`, "status");
          }
          status = req.status as EventStatus;
        }
        await ownedTarget(req.keyId, req.subscriptionId);
        const scope: PageScope = { list: `events:${status ?? ""}`, keyId: req.keyId, parent: req.subscriptionId };
        const cursor = decodePageToken(d.tokenKeys, scope, req.pageToken, isPageCursor);
        const rows = await d.store.listEvents(req.subscriptionId, status, limit, cursor);
        const page = pageOf(d.tokenKeys, scope, rows, limit, eventCursor);
        return create(ListEventsResponseSchema, { items: page.items.map(toEventView), nextPageToken: page.nextPageToken });
      },

      async getEvent(req) {
        if (!isId("sub", req.subscriptionId) || !isId("evt", req.eventId)) throw notFound("event");
        await ownedTarget(req.keyId, req.subscriptionId);
        const row = await d.store.getEvent(req.subscriptionId, req.eventId);
        if (!row) throw notFound("event");
        return create(EventResponseSchema, { event: toEventView(row) });
      },

      async retryEvent(req) {
        if (!isId("sub", req.subscriptionId) || !isId("evt", req.eventId)) throw notFound("event");
        await ownedTarget(req.keyId, req.subscriptionId);
        let scheduled: string | undefined;
        const out = await d.store.idempotent(
          EventResponseSchema,
          req.keyId,
          `POST /v1/subscriptions/${req.subscriptionId}/events/${req.eventId}/retry`,
          req.idempotency,
          async (tx) => {
            const row = await d.store.lockEvent(tx, req.subscriptionId, req.eventId);
            if (!row) throw notFound("event");
            if (row.status === "pending") {
              throw new ApiError("event_not_retryable", "The event is still pending; only delivered or failed events can be retried.");
            }
            await activeTarget(req.keyId, req.subscriptionId);
            // A finished event is in no schedule set: reserving it cannot disturb a live claim.
            await beforeEffect(() => d.schedule.reserve([row.id], Date.now() + d.reserveMs));
            const updated = await d.store.restartCycle(tx, row, new Date(firstDueMs()));
            scheduled = updated.id;
            return create(EventResponseSchema, { event: toEventView(updated) });
          },
        );
        return dueNow(out, scheduled);
      },

      async deleteSubscriptionEvents(req) {
        if (!isId("sub", req.subscriptionId)) return create(DeleteSubscriptionEventsResponseSchema, { deleted: 0n });
        // Only a deleted subscription's events go: the request names no key, so a subscription the registry still
        // has is not the caller's to empty (a stray or forged call deletes nothing).
        const target = (await d.targets.get([req.subscriptionId], true)).get(req.subscriptionId);
        if (target?.exists) return create(DeleteSubscriptionEventsResponseSchema, { deleted: 0n });
        // Recorded first (the events leave GET /v1/events at once), then one short batch here, so a small
        // subscription's events are gone when the call returns; a larger one's rest goes in the background
        // (deliverer/jobs/event-purge.ts), never in one long statement.
        await d.store.requestPurge(req.subscriptionId);
        const { deleted, pendingIds } = await d.store.purgeBatch(req.subscriptionId, PURGE_INLINE_BATCH);
        // The events are gone from PostgreSQL: a schedule entry left behind is dropped when it is claimed.
        await afterEffect(() => d.schedule.remove(pendingIds));
        if (deleted === PURGE_INLINE_BATCH) d.purge?.();
        return create(DeleteSubscriptionEventsResponseSchema, { deleted: BigInt(deleted) });
      },
    });
  };
}
