// Fairness: one destination never answers (each attempt runs into the timeout) while a burst goes to a healthy one.
// The healthy burst is delivered completely before the dead destination's first timeout has even expired: the
// per-host limit keeps the dead host from taking every slot.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startReceiver, type Receiver } from "../../../tools/receiver/server.ts";
import { enqueueTransfers, startDeliveryBed, type DeliveryBed } from "../../support/delivery.ts";

const TIMEOUT_MS = 6_000;
let bed: DeliveryBed;
let dead: Receiver;

beforeAll(async () => {
  bed = await startDeliveryBed({ env: { DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS) } });
  // The dead destination is a second listener, addressed as 127.0.0.1 (the healthy one is localhost).
  dead = await startReceiver({ cert: bed.pki.cert, key: bed.pki.key });
}, 60_000);

afterAll(async () => {
  await dead?.close();
  await bed?.stop();
}, 60_000);

test("a burst to a healthy destination completes while a dead destination's first attempts are still hanging", async () => {
  dead.setBehaviour("/dead", { kind: "hang" });
  const deadSub = await bed.subscribe("/dead", { url: `https://127.0.0.1:${dead.port}/dead` });
  const healthySub = await bed.subscribe("/healthy");

  // The dead destination's events come first and are due first.
  await enqueueTransfers(bed, deadSub.subscriptionId, 400, 0);
  await dead.waitForCount("/dead", 1, 10_000);
  const firstDeadAttempt = dead.deliveries("/dead")[0]!.receivedAt;
  await enqueueTransfers(bed, healthySub.subscriptionId, 600, 100_000);

  const firstTimeoutExpires = firstDeadAttempt + TIMEOUT_MS;
  let deliveredAt = 0;
  while (Date.now() < firstTimeoutExpires + 20_000) {
    const [row] = (await bed.sql`SELECT count(*)::int AS n FROM event_deliveries WHERE subscription_id = ${healthySub.subscriptionId} AND status = 'delivered'`) as { n: number }[];
    if (row!.n === 600) {
      deliveredAt = Date.now();
      break;
    }
    await Bun.sleep(20);
  }
  expect(deliveredAt).toBeGreaterThan(0);
  expect(deliveredAt).toBeLessThan(firstTimeoutExpires);
  // The dead destination never had more attempts in flight than its per-host share.
  expect(dead.count("/dead")).toBeLessThanOrEqual(32);
  const [deadState] = (await bed.sql`SELECT count(*)::int AS n FROM event_deliveries WHERE subscription_id = ${deadSub.subscriptionId} AND attempts = 0`) as { n: number }[];
  expect(deadState!.n).toBeGreaterThan(0);
}, 60_000);
