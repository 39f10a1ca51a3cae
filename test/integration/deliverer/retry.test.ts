// Manual retry restarts the schedule; a delivered event re-sent adds to deliveryCount; webhook-id never changes.
// Disabled subscriptions hold their deliveries (not attempted, not counted) and resume; deleted ones cancel them.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startDeliveryBed, waitForEvent, type DeliveryBed, rpcOutcome } from "../../support/delivery.ts";

let bed: DeliveryBed;

beforeAll(async () => {
  bed = await startDeliveryBed({ delivererDeps: { targetTtlMs: 0, worker: { holdCheckMs: 200 } } });
}, 60_000);

afterAll(async () => {
  await bed?.stop();
}, 60_000);


describe("manual retry", () => {
  test("failed → retry → pending with attempts 0 → a full new cycle; delivered → retry adds to deliveryCount", async () => {
    const path = "/retry";
    bed.receiver.setBehaviour(path, { kind: "status", status: 503, body: "down" });
    const sub = await bed.subscribe(path);
    const created = await bed.delivery.createTestEvent({ ...sub, kind: "" });
    const ref = { ...sub, eventId: created.event!.id };
    const failed = await waitForEvent(bed, ref, (e) => e.status === "failed");
    expect(failed.attempts).toBe(7);
    expect(bed.receiver.count(path)).toBe(7);

    // While failing again in a new cycle the counters restart.
    const retried = await bed.delivery.retryEvent(ref);
    expect(retried.event!.status).toBe("pending");
    expect(retried.event!.attempts).toBe(0);
    expect(retried.event!.deliveryCount).toBe(0);
    const failedAgain = await waitForEvent(bed, ref, (e) => e.status === "failed");
    expect(failedAgain.attempts).toBe(7);
    expect(bed.receiver.count(path)).toBe(14);

    bed.receiver.setBehaviour(path, { kind: "ok" });
    await bed.delivery.retryEvent(ref);
    const delivered = await waitForEvent(bed, ref, (e) => e.status === "delivered");
    expect(delivered.attempts).toBe(1);
    expect(delivered.deliveryCount).toBe(1);
    expect(delivered.responseStatus).toBe(200);

    const again = await bed.delivery.retryEvent(ref);
    expect(again.event!.status).toBe("pending");
    expect(again.event!.attempts).toBe(0);
    expect(again.event!.deliveryCount).toBe(1);
    const twice = await waitForEvent(bed, ref, (e) => e.status === "delivered" && e.deliveryCount === 2);
    expect(twice.attempts).toBe(1);

    const all = bed.receiver.deliveries(path);
    expect(all.length).toBe(16);
    expect(new Set(all.map((d) => d.headers["webhook-id"]))).toEqual(new Set([ref.eventId]));
    expect(all.every((d) => d.verified)).toBe(true);
  });

  test("a pending event is not retryable; unknown or foreign events are not found", async () => {
    const path = "/retry-pending";
    bed.receiver.setBehaviour(path, { kind: "hang" });
    const sub = await bed.subscribe(path);
    const created = await bed.delivery.createTestEvent({ ...sub, kind: "" });
    const ref = { ...sub, eventId: created.event!.id };
    expect(await rpcOutcome(bed.delivery.retryEvent(ref))).toBe("event_not_retryable");
    const other = await bed.subscribe("/retry-other");
    expect(await rpcOutcome(bed.delivery.retryEvent({ ...other, eventId: ref.eventId }))).toBe("not_found");
    expect(await rpcOutcome(bed.delivery.getEvent({ ...other, eventId: ref.eventId }))).toBe("not_found");
    expect(await rpcOutcome(bed.delivery.retryEvent({ ...sub, eventId: "evt_01JZZZZZZZZZZZZZZZZZZZZZZZ" }))).toBe("not_found");
    expect(await rpcOutcome(bed.delivery.getEvent({ ...sub, eventId: "nope" }))).toBe("not_found");
  });

  test("retry and test on a disabled subscription: subscription_disabled, nothing changes", async () => {
    const path = "/retry-disabled";
    const sub = await bed.subscribe(path);
    const created = await bed.delivery.createTestEvent({ ...sub, kind: "" });
    const ref = { ...sub, eventId: created.event!.id };
    await waitForEvent(bed, ref, (e) => e.status === "delivered");
    await bed.subscriptions.updateSubscription({
      keyId: sub.keyId, id: sub.subscriptionId, destination: { type: "https", url: bed.receiver.url(path) },
      events: ["service.ping"], status: "disabled", description: "",
    });
    expect(await rpcOutcome(bed.delivery.retryEvent(ref))).toBe("subscription_disabled");
    expect(await rpcOutcome(bed.delivery.createTestEvent({ ...sub, kind: "" }))).toBe("subscription_disabled");
    const after = (await bed.delivery.getEvent(ref)).event!;
    expect(after.status).toBe("delivered");
    expect(after.deliveryCount).toBe(1);
    const [{ n }] = (await bed.sql`SELECT count(*)::int AS n FROM events WHERE subscription_id = ${sub.subscriptionId}`) as [{ n: number }];
    expect(n).toBe(1);
  });
});

describe("disabled and deleted subscriptions", () => {
  test("pending deliveries of a disabled subscription are held (not attempted, not counted) and resume when enabled", async () => {
    const path = "/held";
    bed.receiver.setBehaviour(path, { kind: "status", status: 500 });
    const sub = await bed.subscribe(path);
    const created = await bed.delivery.createTestEvent({ ...sub, kind: "" });
    const ref = { ...sub, eventId: created.event!.id };
    await waitForEvent(bed, ref, (e) => e.attempts >= 1);
    const update = (status: string) =>
      bed.subscriptions.updateSubscription({
        keyId: sub.keyId, id: sub.subscriptionId, destination: { type: "https", url: bed.receiver.url(path) },
        events: ["service.ping"], status, description: "",
      });
    await update("disabled");
    await Bun.sleep(600);
    const held = (await bed.delivery.getEvent(ref)).event!;
    expect(held.status).toBe("pending");
    const sentWhileDisabled = bed.receiver.count(path);
    await Bun.sleep(1_000);
    // Nothing more reached the destination and the attempt counter stood still.
    expect(bed.receiver.count(path)).toBe(sentWhileDisabled);
    expect((await bed.delivery.getEvent(ref)).event!.attempts).toBe(held.attempts);
    expect(held.attempts).toBeLessThan(7);

    bed.receiver.setBehaviour(path, { kind: "ok" });
    await update("enabled");
    const delivered = await waitForEvent(bed, ref, (e) => e.status === "delivered");
    expect(delivered.attempts).toBe(held.attempts + 1);
    expect(delivered.deliveryCount).toBe(1);
  });

  test("DeleteSubscriptionEvents cancels pending deliveries and removes the events", async () => {
    const path = "/deleted";
    bed.receiver.setBehaviour(path, { kind: "status", status: 500 });
    const sub = await bed.subscribe(path);
    const created = await bed.delivery.createTestEvent({ ...sub, kind: "" });
    const ref = { ...sub, eventId: created.event!.id };
    await waitForEvent(bed, ref, (e) => e.attempts >= 1);
    await bed.subscriptions.deleteSubscription({ keyId: sub.keyId, id: sub.subscriptionId });
    const res = await bed.delivery.deleteSubscriptionEvents({ subscriptionId: sub.subscriptionId });
    // A retry due between the two calls finds the subscription gone and drops the event itself (the next test), so
    // the call removes it or finds it already removed; either way it is gone and nothing more is sent.
    expect([0n, 1n]).toContain(res.deleted);
    const count = bed.receiver.count(path);
    await Bun.sleep(800);
    expect(bed.receiver.count(path)).toBe(count);
    expect(await rpcOutcome(bed.delivery.getEvent(ref))).toBe("not_found");
  });

  test("a subscription deleted without the cleanup call: the worker cancels its events when it finds it gone", async () => {
    const path = "/gone";
    bed.receiver.setBehaviour(path, { kind: "status", status: 500 });
    const sub = await bed.subscribe(path);
    const created = await bed.delivery.createTestEvent({ ...sub, kind: "" });
    const ref = { ...sub, eventId: created.event!.id };
    await waitForEvent(bed, ref, (e) => e.attempts >= 1);
    await bed.subscriptions.deleteSubscription({ keyId: sub.keyId, id: sub.subscriptionId });
    const deadline = Date.now() + 10_000;
    while ((await rpcOutcome(bed.delivery.getEvent(ref))) !== "not_found") {
      if (Date.now() > deadline) throw new Error("event of a deleted subscription still exists");
      await Bun.sleep(50);
    }
    const count = bed.receiver.count(path);
    await Bun.sleep(500);
    expect(bed.receiver.count(path)).toBe(count);
  });
});
