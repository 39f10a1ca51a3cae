// Held events (a disabled subscription's, a revoked key's) resume when their subscription is active again, however
// many other subscriptions hold events that stay held: the held check pages through all of them, not only the first
// page (issue 29, fault 7).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { create } from "@bufbuild/protobuf";
import { NewEventSchema } from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { sampleTransfer, startDeliveryBed, type DeliveryBed } from "../../support/delivery.ts";

let bed: DeliveryBed;

beforeAll(async () => {
  // No claim loop: the test runs the held check itself, and nothing is sent.
  bed = await startDeliveryBed({ delivererDeps: { startWorker: false, targetTtlMs: 0 } });
}, 60_000);

afterAll(async () => {
  await bed?.stop();
}, 60_000);

/** A subscription of `keyId` to the receiver, with `status`. */
async function subscription(keyId: string, status: string): Promise<string> {
  const res = await bed.subscriptions.createSubscription({
    keyId,
    destination: { type: "https", url: bed.receiver.url("/held") },
    events: ["wallet.transfer.broadcasted"],
    status,
    description: "",
  });
  return res.subscription!.id;
}

async function setStatus(keyId: string, id: string, status: string): Promise<void> {
  await bed.subscriptions.updateSubscription({
    keyId, id, destination: { type: "https", url: bed.receiver.url("/held") }, events: ["wallet.transfer.broadcasted"], status, description: "",
  });
}

test("a subscription enabled again gets its held events back beside 500 revoked keys' subscriptions that hold theirs", async () => {
  // 500 subscriptions of one key, then a newer one of another key: each with one event.
  const revoked = (await bed.keys.createApiKey({ name: "revoked", chains: [] })).key!.id;
  const stuck: string[] = [];
  for (let i = 0; i < 500; i += 50) stuck.push(...(await Promise.all(Array.from({ length: 50 }, () => subscription(revoked, "")))));
  const keyId = (await bed.keys.createApiKey({ name: "resumed", chains: [] })).key!.id;
  const resumed = await subscription(keyId, "");
  const all = [...stuck, resumed];
  const { eventIds } = await bed.delivery.enqueue({
    events: all.map((subscriptionId, i) => create(NewEventSchema, { subscriptionId, kind: "wallet.transfer.broadcasted", transfer: sampleTransfer(i) })),
  });
  expect(eventIds.length).toBe(501);

  // The key revoked and the newer subscription disabled: the worker found every event's subscription inactive and
  // held it.
  await bed.keys.revokeApiKey({ id: revoked });
  await setStatus(keyId, resumed, "disabled");
  await bed.deliverer!.store.markHeld(eventIds, "key_revoked");
  await bed.deliverer!.schedule.remove(eventIds);

  await setStatus(keyId, resumed, "enabled");
  await bed.deliverer!.worker.resumeHeld();

  const rows = (await bed.sql`SELECT subscription_id, held FROM event_deliveries`) as { subscription_id: string; held: boolean }[];
  const held = new Map(rows.map((r) => [r.subscription_id, r.held]));
  expect(held.get(resumed)).toBe(false);
  expect(stuck.filter((id) => held.get(id) !== true)).toEqual([]);
}, 60_000);
