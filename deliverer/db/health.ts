// Health: a subscription's delivery health from its attempts of the last 24 hours and its pending events.
import { and, desc, eq } from "drizzle-orm";
import { withDatabase } from "../../common/db.ts";
import { sqlFile } from "../../common/sql-file.ts";
import { attempts } from "../schema.ts";
import type { DelivererDb } from "./connection.ts";
import type { SubscriptionHealth } from "./types.ts";

/** Subscription $1's attempts since $3 (a day ago): counts, since $2 (an hour ago) too, latencies, and each one's hour. */
const HEALTH_WINDOW_SQL = sqlFile(new URL("./health-window.sql", import.meta.url));
/** Subscription $1's failures after $2 (its last success). */
const HEALTH_STREAK_SQL = sqlFile(new URL("./health-streak.sql", import.meta.url));
/** Subscription $1's pending events. */
const HEALTH_PENDING_SQL = sqlFile(new URL("./health-pending.sql", import.meta.url));

/** A subscription's newest successful (or failed) attempt. */
async function latestAttempt(db: DelivererDb, subscriptionId: string, ok: boolean): Promise<{ at: Date; status: number | null; error: string | null } | undefined> {
  const [row] = await db
    .select({ at: attempts.attemptedAt, status: attempts.responseStatus, error: attempts.error })
    .from(attempts)
    .where(and(eq(attempts.subscriptionId, subscriptionId), eq(attempts.ok, ok)))
    .orderBy(desc(attempts.attemptedAt))
    .limit(1);
  return row;
}

/** A subscription's delivery health from its attempts of the last 24 hours and its pending events. */
export function health(db: DelivererDb, subscriptionId: string, now: Date): Promise<SubscriptionHealth> {
  return withDatabase(async () => {
    const dayAgo = new Date(now.getTime() - 24 * 3_600_000).toISOString();
    const hourAgo = new Date(now.getTime() - 3_600_000).toISOString();
    const [w] = (await db.$client.unsafe(HEALTH_WINDOW_SQL, [subscriptionId, hourAgo, dayAgo])) as {
      hour_attempts: number; hour_ok: number; day_attempts: number; day_ok: number; p50: number | null; p99: number | null;
      marks: string | [number, boolean][];
    }[];
    const [lastOk, lastFail] = await Promise.all([latestAttempt(db, subscriptionId, true), latestAttempt(db, subscriptionId, false)]);
    // Failures since the last success (bounded: the count stops mattering past a large number).
    const [streak] = (await db.$client.unsafe(HEALTH_STREAK_SQL, [subscriptionId, lastOk?.at.toISOString() ?? "-infinity"])) as { n: number }[];
    const [pending] = (await db.$client.unsafe(HEALTH_PENDING_SQL, [subscriptionId])) as { n: number }[];
    const marks = (typeof w?.marks === "string" ? JSON.parse(w.marks) : (w?.marks ?? [])) as [number, boolean][];
    const hourly = Array.from({ length: 24 }, () => ({ n: 0, ok: 0 }));
    for (const [h, ok] of marks) {
      const slot = hourly[Math.min(23, Math.max(0, h))]!;
      slot.n++;
      if (ok) slot.ok++;
    }
    return {
      hour: { attempts: w?.hour_attempts ?? 0, succeeded: w?.hour_ok ?? 0 },
      day: { attempts: w?.day_attempts ?? 0, succeeded: w?.day_ok ?? 0 },
      p50: w?.p50 ?? null,
      p99: w?.p99 ?? null,
      lastSuccess: lastOk?.at ?? null,
      lastFailure: lastFail ? { at: lastFail.at, reason: lastFail.error ?? `HTTP ${lastFail.status}` } : null,
      consecutiveFailures: streak?.n ?? 0,
      pending: pending?.n ?? 0,
      hourly: hourly.map((h) => (h.n === 0 ? -1 : h.ok / h.n)),
    };
  });
}
