// What an attempt's result makes of its event (deliverer/worker/outcome.ts): delivered, failed for good, or pending
// again after the retry policy's delay.
import { describe, expect, test } from "bun:test";
import { attemptOutcome, type OutcomeInput } from "../../../deliverer/worker/outcome.ts";
import type { AttemptOutcome } from "../../../deliverer/send.ts";

const NOW = Date.parse("2026-01-01T00:00:00Z");
const ok: AttemptOutcome = { ok: true, status: 200, body: "fine", retryAfterMs: null, failure: null, durationMs: 12.6 };
const refused: AttemptOutcome = { ok: false, status: null, body: "connection refused", retryAfterMs: null, failure: "connect", durationMs: 3 };
const busy: AttemptOutcome = { ok: false, status: 503, body: "busy", retryAfterMs: 5_000, failure: "http", durationMs: 4 };

function input(result: AttemptOutcome, over: Partial<OutcomeInput> = {}): OutcomeInput {
  return {
    row: { id: "evt_1", attempts: 0, cycle: 2 },
    result,
    attemptId: "att_1",
    startedAt: new Date(NOW - 20),
    queue: false,
    retrySchedule: [0, 1_000, 10_000],
    random: () => 0,
    now: NOW,
    ...over,
  };
}

describe("attemptOutcome", () => {
  test("a success is delivered, with the answer and no error", () => {
    const o = attemptOutcome(input(ok));
    expect(o).toMatchObject({ id: "evt_1", prevAttempts: 0, cycle: 2, status: "delivered", attempts: 1, delivered: true, responseStatus: 200, responseBody: "fine", nextAttemptAt: null });
    expect(o.attempt).toEqual({ id: "att_1", at: new Date(NOW - 20), durationMs: 13, error: null, responseBody: "fine" });
  });

  test("a failure with attempts left is pending after the schedule's next delay", () => {
    const o = attemptOutcome(input(refused));
    expect(o.status).toBe("pending");
    expect(o.nextAttemptAt).toEqual(new Date(NOW + 1_000));
    // No HTTP answer: the reason is the error, and an HTTPS attempt keeps no response body.
    expect(o.attempt.error).toBe("connection refused");
    expect(o.attempt.responseBody).toBeNull();
  });

  test("Retry-After lengthens the delay within the policy's bound", () => {
    const o = attemptOutcome(input(busy));
    expect(o.nextAttemptAt!.getTime()).toBeGreaterThanOrEqual(NOW + 1_000);
    expect(o.attempt.error).toBeNull();
    expect(o.attempt.responseBody).toBe("busy");
  });

  test("the last attempt's failure fails the event", () => {
    const o = attemptOutcome(input(refused, { row: { id: "evt_1", attempts: 2, cycle: 0 } }));
    expect(o).toMatchObject({ status: "failed", attempts: 3, delivered: false, nextAttemptAt: null, prevAttempts: 2 });
  });

  test("a queue destination keeps the broker's answer on failure", () => {
    const o = attemptOutcome(input({ ...refused, body: "returned: NO_ROUTE", failure: "broker" }, { queue: true }));
    expect(o.attempt).toMatchObject({ error: "returned: NO_ROUTE", responseBody: "returned: NO_ROUTE" });
  });
});
