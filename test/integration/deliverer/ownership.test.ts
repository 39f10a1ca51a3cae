// The deliverer checks that the key owns the subscription itself, against the registry's record, instead of trusting
// the caller: a legitimate gateway credential naming another key's subscription (and its event) reads, retries,
// recovers and tests nothing; it is not_found, as for a subscription that does not exist. DeleteSubscriptionEvents,
// which names no key, empties only a subscription the registry no longer has.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createClient, type Client } from "@connectrpc/connect";
import { inProcessTransport } from "../../../common/rpc.ts";
import { DeliveryService } from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { rpcOutcome, sampleTransfer, startDeliveryBed, type DeliveryBed } from "../../support/delivery.ts";

let bed: DeliveryBed;
let asGateway: Client<typeof DeliveryService>;
let owner: { keyId: string; subscriptionId: string };
let other: { keyId: string; subscriptionId: string };
let eventId: string;

beforeAll(async () => {
  bed = await startDeliveryBed({ delivererDeps: { startWorker: false } });
  asGateway = createClient(DeliveryService, inProcessTransport(bed.deliverer!.routes, "gateway"));
  owner = await bed.subscribe("/owner");
  other = await bed.subscribe("/other");
  const enqueued = await bed.delivery.enqueue({
    events: [{ subscriptionId: owner.subscriptionId, kind: "wallet.transfer.broadcasted", transfer: sampleTransfer(1) }],
  });
  eventId = enqueued.eventIds[0]!;
}, 60_000);

afterAll(async () => {
  await bed?.stop();
}, 60_000);

describe("another key naming the owner's subscription", () => {
  const foreign = () => ({ keyId: other.keyId, subscriptionId: owner.subscriptionId });
  const since = () => BigInt(Date.now() - 3_600_000);

  test("the owner reads its event (the control)", async () => {
    const got = await asGateway.getEvent({ ...owner, eventId });
    expect(got.event!.id).toBe(eventId);
  });

  test("GetEvent, ListEvents, ListAttempts and GetHealth are not_found", async () => {
    expect(await rpcOutcome(asGateway.getEvent({ ...foreign(), eventId }))).toBe("not_found");
    expect(await rpcOutcome(asGateway.listEvents({ ...foreign(), limit: 10 }))).toBe("not_found");
    expect(await rpcOutcome(asGateway.listAttempts({ ...foreign(), eventId, limit: 10 }))).toBe("not_found");
    expect(await rpcOutcome(asGateway.getHealth(foreign()))).toBe("not_found");
  });

  test("RetryEvent, RecoverEvents and CreateTestEvent are not_found and change nothing", async () => {
    const before = await bed.sql`SELECT count(*)::int AS n FROM events WHERE subscription_id = ${owner.subscriptionId}`;
    expect(await rpcOutcome(asGateway.retryEvent({ ...foreign(), eventId }))).toBe("not_found");
    expect(await rpcOutcome(asGateway.recoverEvents({ ...foreign(), sinceMs: since(), status: "failed" }))).toBe("not_found");
    expect(await rpcOutcome(asGateway.createTestEvent({ ...foreign(), kind: "" }))).toBe("not_found");
    const after = await bed.sql`SELECT count(*)::int AS n FROM events WHERE subscription_id = ${owner.subscriptionId}`;
    expect(after).toEqual(before);
  });

  test("the search scoped to the other key finds none of the owner's events", async () => {
    const found = await asGateway.searchEvents({ keyId: other.keyId, subscriptionId: owner.subscriptionId, limit: 10 });
    expect(found.items).toHaveLength(0);
  });
});

test("DeleteSubscriptionEvents deletes nothing of a subscription the registry still has", async () => {
  const res = await asGateway.deleteSubscriptionEvents({ subscriptionId: owner.subscriptionId });
  expect(res.deleted).toBe(0n);
  expect((await asGateway.getEvent({ ...owner, eventId })).event!.id).toBe(eventId);

  await bed.subscriptions.deleteSubscription({ keyId: owner.keyId, id: owner.subscriptionId });
  expect((await asGateway.deleteSubscriptionEvents({ subscriptionId: owner.subscriptionId })).deleted).toBe(1n);
});
