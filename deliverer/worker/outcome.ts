// What an attempt's result makes of its event: delivered, failed for good, or pending again after the retry
// policy's delay. Pure: the time, the attempt's id and the random source come in, so it is tested alone.
import { isExhausted, nextDelay } from "../../common/retry-policy.ts";
import type { ClaimedEvent, Outcome } from "../db/types.ts";
import type { AttemptOutcome } from "../send.ts";

export interface OutcomeInput {
  /** The event as claimed (its attempts before this one, its cycle). */
  row: Pick<ClaimedEvent, "id" | "attempts" | "cycle">;
  result: AttemptOutcome;
  /** The attempt's id and when it started. */
  attemptId: string;
  startedAt: Date;
  /** Whether the destination is a queue (a broker's answer is kept whatever the result). */
  queue: boolean;
  retrySchedule: number[];
  random: () => number;
  /** Now, in ms: the next attempt's time is reckoned from it. */
  now: number;
}

export function attemptOutcome(i: OutcomeInput): Outcome {
  const { row, result } = i;
  const attempts = row.attempts + 1;
  const attempt: Outcome["attempt"] = {
    id: i.attemptId,
    at: i.startedAt,
    durationMs: Math.round(result.durationMs),
    // A failure without an HTTP response: the body is the short reason (timeout, connection refused, TLS, SSRF
    // block, a broker's refusal). A success has no error, also where no HTTP status exists (a broker's "acked").
    error: !result.ok && result.status === null ? result.body : null,
    // A queue destination's answer is the broker's, success or not (issue 12: "acked", "returned: NO_ROUTE", "no
    // stream", "timeout"); an HTTPS attempt has a body only when the endpoint answered.
    responseBody: i.queue || result.status !== null ? result.body : null,
  };
  const common = {
    id: row.id,
    prevAttempts: row.attempts,
    cycle: row.cycle,
    attempts,
    responseStatus: result.status,
    responseBody: result.body,
    attempt,
  };
  if (result.ok) return { ...common, status: "delivered", delivered: true, nextAttemptAt: null };
  if (isExhausted(i.retrySchedule, attempts)) return { ...common, status: "failed", delivered: false, nextAttemptAt: null };
  const delay = nextDelay(i.retrySchedule, attempts, result.retryAfterMs, i.random);
  return { ...common, status: "pending", delivered: false, nextAttemptAt: new Date(i.now + delay) };
}
