import { afterAll, beforeAll, expect, test } from "bun:test";
import { renderPayload } from "../../../deliverer/payload.ts";
import { startDeliveryBed, type DeliveryBed } from "../../support/delivery.ts";

let bed: DeliveryBed;
beforeAll(async () => {
  bed = await startDeliveryBed();
}, 60_000);
afterAll(async () => {
  await bed?.stop();
}, 60_000);

test("a test event reaches the receiver signed", async () => {
  const { keyId, subscriptionId } = await bed.subscribe("/smoke");
  const res = await bed.delivery.createTestEvent({ keyId, subscriptionId, kind: "" });
  expect(res.event!.status).toBe("pending");
  await bed.receiver.waitForCount("/smoke", 1);
  const [d] = bed.receiver.deliveries("/smoke");
  expect(d!.verified).toBe(true);
  for (let i = 0; i < 50; i++) {
    const ev = await bed.delivery.getEvent({ keyId, subscriptionId, eventId: res.event!.id });
    if (ev.event!.status === "delivered") break;
    await Bun.sleep(20);
  }
  const ev = await bed.delivery.getEvent({ keyId, subscriptionId, eventId: res.event!.id });
  expect(ev.event!.status).toBe("delivered");
});

test("the deliverer's metrics are on the shared registry", async () => {
  const { metrics } = await import("../../../common/http-service.ts");
  const text = await metrics.metrics();
  for (const name of [
    "deliverer_queue_depth",
    "deliverer_due_unclaimed_age_seconds",
    "deliverer_attempt_duration_seconds",
    "deliverer_destination_failures_total",
    "deliverer_attempts_total",
  ]) {
    expect(text).toContain(name);
  }
  expect(text).toMatch(/deliverer_attempts_total\{result="success"\} [1-9]/);
});

test("payload is stored as the JSON object a delivery sends, keys in the contract's order", async () => {
  const rows = (await bed.sql`SELECT json_typeof(payload::json) AS t, payload::json->>'kind' AS k, payload FROM events LIMIT 1`) as {
    t: string; k: string; payload: string;
  }[];
  expect(rows[0]).toMatchObject({ t: "object", k: "service.ping" });
  expect(rows[0]!.payload).toBe(renderPayload(JSON.parse(rows[0]!.payload)));
  expect(Object.keys(JSON.parse(rows[0]!.payload))).toEqual(["id", "kind", "date", "subscriptionId", "data"]);
});
