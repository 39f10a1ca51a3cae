// Retry-After on 429/503 is honoured within [scheduled delay, 2× scheduled delay] (docs/CONTRACT.md), measured between
// the attempts a real receiver saw.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startDeliveryBed, waitForEvent, type DeliveryBed } from "../../support/delivery.ts";

const STEP_MS = 400;
let bed: DeliveryBed;

beforeAll(async () => {
  bed = await startDeliveryBed({ env: { RETRY_SCHEDULE: `0,${STEP_MS}ms,${STEP_MS}ms` } });
}, 60_000);

afterAll(async () => {
  await bed?.stop();
}, 60_000);

async function gapsFor(path: string, status: number, retryAfter: string): Promise<number[]> {
  bed.receiver.setBehaviour(path, { kind: "status", status, headers: { "retry-after": retryAfter } });
  const sub = await bed.subscribe(path);
  const created = await bed.delivery.createTestEvent({ ...sub, kind: "" });
  const e = await waitForEvent(bed, { ...sub, eventId: created.event!.id }, (v) => v.status === "failed", 30_000);
  expect(e.attempts).toBe(3);
  expect(e.responseStatus).toBe(status);
  const at = bed.receiver.deliveries(path).map((d) => d.receivedAt);
  return at.slice(1).map((t, i) => t - at[i]!);
}

test("a long Retry-After on 429 is cut to twice the scheduled delay", async () => {
  const gaps = await gapsFor("/ra-long", 429, "3600");
  for (const g of gaps) {
    expect(g).toBeGreaterThanOrEqual(STEP_MS * 2 - 5);
    // Far from an hour: a bounded wait for what must happen, with room for a loaded machine.
    expect(g).toBeLessThan(STEP_MS * 2 + 3_000);
  }
});

test("a Retry-After shorter than the schedule on 503 does not bring the attempt forward", async () => {
  const gaps = await gapsFor("/ra-short", 503, "0");
  for (const g of gaps) expect(g).toBeGreaterThanOrEqual(STEP_MS - 5);
});
