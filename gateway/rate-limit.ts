// Per-API-key rate limiting in Redis with GCRA (the token bucket as one timestamp per key): one Lua script, one
// round trip, Redis's own clock so every gateway replica agrees. Redis being down never blocks the API: the
// limiter fails open (CONTRACT.md "HTTP conventions").
import { createHash } from "node:crypto";
import type { Redis } from "../common/redis.ts";

// KEYS[1] = the key's bucket; ARGV[1] = emission interval (µs per request); ARGV[2] = burst.
// Returns {allowed (1|0), remaining, retry_after_us, reset_us}.
const GCRA = `
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local tolerance = interval * burst
local new_tat = tat + interval
local allow_at = new_tat - tolerance
if allow_at > now then
  return {0, 0, allow_at - now, tat - now}
end
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1)
return {1, math.floor((tolerance - (new_tat - now)) / interval), 0, new_tat - now}
`;
const GCRA_SHA = createHash("sha1").update(GCRA).digest("hex");

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the bucket is full again (RateLimit-Reset). */
  resetSeconds: number;
  /** Seconds to wait before a retry can pass (Retry-After); 0 when allowed. */
  retryAfterSeconds: number;
}

export interface RateLimiter {
  /** The decision for one request of this key, or undefined when Redis could not answer (fail open). */
  take(keyId: string): Promise<RateDecision | undefined>;
}

export interface RateLimitOptions {
  redis: Redis;
  prefix: string;
  rps: number;
  burst: number;
  /** A slow Redis must not slow the API: past this, the request passes unlimited. */
  timeoutMs?: number;
  onFailure?: (err: unknown) => void;
}

export function createRateLimiter(opts: RateLimitOptions): RateLimiter {
  if (!(opts.rps > 0) || !(opts.burst >= 1)) {
    throw new Error(`RATE_LIMIT_RPS must be above 0 and RATE_LIMIT_BURST at least 1 (got ${opts.rps} and ${opts.burst})`);
  }
  const interval = Math.max(1, Math.round(1_000_000 / opts.rps));
  const burst = Math.max(1, Math.floor(opts.burst));
  const timeoutMs = opts.timeoutMs ?? 250;
  const { redis } = opts;

  const run = async (key: string): Promise<unknown> => {
    try {
      return await redis.evalsha(GCRA_SHA, 1, key, interval, burst);
    } catch (err) {
      if (!String(err).includes("NOSCRIPT")) throw err;
      return await redis.eval(GCRA, 1, key, interval, burst);
    }
  };

  return {
    async take(keyId) {
      // While disconnected, ioredis would queue the command until it reconnects: answer at once instead.
      if (redis.status !== "ready") return undefined;
      let timer: Timer | undefined;
      try {
        const timeout = new Promise<undefined>((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
        });
        const reply = await Promise.race([run(`${opts.prefix}ratelimit:{${keyId}}`), timeout]);
        if (!Array.isArray(reply)) return undefined;
        const [allowed, remaining, retryUs, resetUs] = reply.map(Number) as [number, number, number, number];
        return {
          allowed: allowed === 1,
          limit: burst,
          remaining: Math.max(0, remaining),
          resetSeconds: Math.ceil(resetUs / 1_000_000),
          retryAfterSeconds: allowed === 1 ? 0 : Math.max(1, Math.ceil(retryUs / 1_000_000)),
        };
      } catch (err) {
        opts.onFailure?.(err);
        return undefined;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** The RateLimit-* headers (IETF draft names) for a decision. */
export function rateLimitHeaders(d: RateDecision): Record<string, string> {
  const headers: Record<string, string> = {
    "ratelimit-limit": String(d.limit),
    "ratelimit-remaining": String(d.remaining),
    "ratelimit-reset": String(d.resetSeconds),
  };
  if (!d.allowed) headers["retry-after"] = String(d.retryAfterSeconds);
  return headers;
}
