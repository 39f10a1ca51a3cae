// The retry policy of webhook deliveries (docs/CONTRACT.md): the schedule of delays before each automatic attempt,
// the jitter added to each, which answers carry a Retry-After and the bounds it is honoured within. The worker asks
// this module for every delay; the configuration parses RETRY_SCHEDULE with it and the OpenAPI description states
// it from here, so the rule has one home.

/** The default RETRY_SCHEDULE: seven attempts, the first at once, the last about two hours after the event. */
export const DEFAULT_RETRY_SCHEDULE = "0,1s,5s,1m,5m,30m,90m";

/** Each delay is lengthened by up to this fraction of itself, so failures of one destination do not retry in step. */
export const JITTER_FRACTION = 0.1;

/** The answers whose Retry-After header sets the next delay. */
const RETRY_AFTER_STATUSES: readonly number[] = [429, 503];

/** A Retry-After is honoured up to this multiple of the scheduled delay (and never below the scheduled delay). */
export const RETRY_AFTER_MAX_FACTOR = 2;

/** Parses a duration: a bare number is milliseconds; units ms, s, m, h. */
function parseDuration(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
  if (!m) throw new Error(`invalid duration "${text}"`);
  const n = Number(m[1]);
  const unit = m[2] ?? "ms";
  const factor = unit === "ms" ? 1 : unit === "s" ? 1_000 : unit === "m" ? 60_000 : 3_600_000;
  return Math.round(n * factor);
}

/** RETRY_SCHEDULE: comma-separated durations (`ms`, `s`, `m`, `h`; bare = ms); its length is the attempt count. */
export function parseRetrySchedule(text: string): number[] {
  const delays = text.split(",").map(parseDuration);
  if (delays.length === 0) throw new Error("RETRY_SCHEDULE needs at least one attempt");
  return delays;
}

/** The delay before the first attempt of a cycle (a new event, a manual retry, a resumed subscription). */
export function firstDelay(schedule: readonly number[]): number {
  return schedule[0] ?? 0;
}

/** Whether `attempts` failed attempts exhaust the schedule (the event is then failed). */
export function isExhausted(schedule: readonly number[], attempts: number): boolean {
  return attempts >= schedule.length;
}

/** The delay before the attempt that follows `attemptsSoFar` failures, with jitter and Retry-After applied. */
export function nextDelay(schedule: readonly number[], attemptsSoFar: number, retryAfterMs: number | null, random: () => number): number {
  const base = schedule[attemptsSoFar] ?? 0;
  const jittered = base + base * JITTER_FRACTION * random();
  if (retryAfterMs === null) return Math.round(jittered);
  return Math.round(Math.max(jittered, Math.min(retryAfterMs, RETRY_AFTER_MAX_FACTOR * base)));
}

/** The Retry-After of an answer with `status`, in ms: only 429 and 503 carry one; null when absent or unreadable. */
export function retryAfterOf(status: number, header: string | null, now = Date.now()): number | null {
  return RETRY_AFTER_STATUSES.includes(status) ? parseRetryAfter(header, now) : null;
}

/** Retry-After as delay-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** A delay in words for the documentation: "at once", "1 s", "5 min", "90 min", "2 h". */
function delayWords(ms: number): string {
  if (ms === 0) return "at once";
  if (ms % 3_600_000 === 0 && ms >= 3 * 3_600_000) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1_000 === 0) return `${ms / 1_000} s`;
  return `${ms} ms`;
}

/** The schedule in words, "at once, 1 s, 5 s, 1 min, 5 min, 30 min and 90 min", for the OpenAPI description. */
export function describeSchedule(schedule: readonly number[]): string {
  const words = schedule.map(delayWords);
  return words.length < 2 ? words.join("") : `${words.slice(0, -1).join(", ")} and ${words.at(-1)}`;
}
