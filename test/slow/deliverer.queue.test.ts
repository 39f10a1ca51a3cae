// The per-host waiting queue: a fast destination lets a worker keep more claimed events than one round of its slots,
// and when that destination turns slow, events that waited so long their lease could no longer cover an attempt go
// back to the schedule instead of being sent late (another replica may hold them by then). Two deliverers share the
// schedule here, so a late send would show as the same webhook-id answered twice.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createDeliverer, type DelivererHandle } from "../../deliverer/index.ts";
import { waitingReleased } from "../../deliverer/metrics.ts";
import { enqueueTransfers, sendsPerWebhookId, startDeliveryBed, type DeliveryBed } from "../support/delivery.ts";
import { until } from "../support/wait.ts";

// Lease = 2 × 1 s + 10 s; an attempt must start within 12 − 1 − 5 = 6 s of its claim.
const TIMEOUT_MS = 1_000;
let bed: DeliveryBed;
let second: DelivererHandle;

beforeAll(async () => {
  bed = await startDeliveryBed({ env: { DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS), RETRY_SCHEDULE: "0,3s,3s,3s,3s,3s,3s" } });
  second = await createDeliverer(bed.config, { registry: bed.registryTransport });
}, 60_000);

afterAll(async () => {
  await second?.close();
  await bed?.stop();
}, 60_000);

async function count(subscriptionId: string, status: string): Promise<number> {
  const [row] = (await bed.sql`SELECT count(*)::int AS n FROM event_deliveries WHERE subscription_id = ${subscriptionId} AND status = ${status}`) as { n: number }[];
  return row!.n;
}

async function released(): Promise<number> {
  return (await waitingReleased.get()).values[0]?.value ?? 0;
}

test("a destination that turns slow: queued claims past their start deadline are released, none is lost or sent twice", async () => {
  const sub = await bed.subscribe("/q");
  const releasedBefore = await released();

  // Fast at first: both workers learn the host answers in milliseconds, so they queue deeply for it.
  await enqueueTransfers(bed, sub.subscriptionId, 64, 0);
  await until("the warm-up deliveries", async () => (await count(sub.subscriptionId, "delivered")) === 64, 20_000);

  // Now every attempt hangs into the timeout: 32 attempts a second per worker, far fewer than they hold.
  bed.receiver.setBehaviour("/q", { kind: "hang" });
  await enqueueTransfers(bed, sub.subscriptionId, 600, 1_000);
  await until("claims released from a waiting queue", async () => (await released()) > releasedBefore, 30_000);

  const recoveredAt = Date.now();
  bed.receiver.setBehaviour("/q", { kind: "ok" });
  await until("every event delivered", async () => (await count(sub.subscriptionId, "delivered")) === 664, 40_000);

  // Nothing failed or stayed behind, and after the recovery each event was answered exactly once.
  expect(await count(sub.subscriptionId, "pending")).toBe(0);
  expect(await count(sub.subscriptionId, "failed")).toBe(0);
  const after = bed.receiver.deliveries("/q").filter((d) => d.receivedAt >= recoveredAt + 50);
  expect(sendsPerWebhookId(after).filter((n) => n > 1)).toEqual([]);
  const [attempts] = (await bed.sql`SELECT max(attempts)::int AS n FROM event_deliveries WHERE subscription_id = ${sub.subscriptionId}`) as { n: number }[];
  expect(attempts!.n).toBeLessThan(7);
}, 120_000);
