// What the DeliveryService handlers share: the two ways a schedule write around a PostgreSQL effect can fail.
import { ApiError, serviceUnavailable } from "../common/contract/index.ts";
import { log } from "../common/logger.ts";
import type { PageCursor } from "./db/types.ts";

/** The schedule (Redis) could not be written before the effect: nothing was done. */
export function scheduleUnavailable(): ApiError {
  return serviceUnavailable("The delivery schedule is unavailable; nothing was changed. Try again shortly.");
}

/** A schedule write before the effect: Redis down means nothing was done, the public 503. */
export async function beforeEffect(op: () => Promise<void>): Promise<void> {
  try {
    await op();
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw scheduleUnavailable();
  }
}

/**
 * A schedule write after the effect committed: the reservation made before it guarantees the event is claimed when
 * the reservation expires, so a failure here delays the delivery but loses nothing, and the call still succeeds.
 */
export async function afterEffect(op: () => Promise<void>): Promise<void> {
  try {
    await op();
  } catch (err) {
    log.warn("schedule update after commit failed; the reservation will bring the event back", { err });
  }
}

/** The cursor after an event of a list (newest first on created_at, id). */
export function eventCursor(last: { createdAt: Date; id: string }): PageCursor {
  return { t: last.createdAt.getTime(), id: last.id };
}

/** The keyset cursor of the event and attempt lists, as a page token carries it. */
export function isPageCursor(value: unknown): value is PageCursor {
  const c = value as PageCursor | null;
  return typeof c === "object" && c !== null && typeof c.t === "number" && typeof c.id === "string";
}
