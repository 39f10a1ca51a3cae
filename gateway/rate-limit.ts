// Per-API-key rate limiting in Redis with GCRA (the token bucket as one timestamp per key): one Lua script, one
// round trip, Redis's own clock so every gateway replica agrees. A request takes as many tokens as it costs
// (gateway/request-cost.ts): all of them or none. Redis being down never blocks the API: the
// limiter fails open (docs/CONTRACT.md "HTTP conventions").
import { createHash } from "node:crypto";
import type { Redis } from "../common/redis.ts";

// KEYS[1] = the key's bucket; ARGV[1] = emission interval (µs per token); ARGV[2] = burst; ARGV[3] = how many
// requests to take, one after the other at Redis's one `now` (the requests of one key gathered in one event-loop
// turn); ARGV[4..] = each request's cost in tokens. Returns {allowed (1|0), remaining, retry_after_us, reset_us} per
// request, flattened.
const GCRA = `
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local tolerance = interval * burst
local out = {}
local taken = false
for i = 1, n do
  local new_tat = tat + interval * tonumber(ARGV[3 + i])
  local allow_at = new_tat - tolerance
  if allow_at > now then
    out[#out+1] = 0; out[#out+1] = 0; out[#out+1] = allow_at - now; out[#out+1] = tat - now
  else
    tat = new_tat
    taken = true
    out[#out+1] = 1; out[#out+1] = math.floor((tolerance - (new_tat - now)) / interval); out[#out+1] = 0; out[#out+1] = new_tat - now
  end
end
if taken then redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.ceil((tat - now) / 1000) + 1) end
return out
`;
const GCRA_SHA = createHash("sha1").update(GCRA).digest("hex");

/** Most requests of one key that share one script call. */
const MAX_BATCH = 256;

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
  /**
   * The decision for one request of this key costing `cost` tokens (default 1; more than the burst counts as the
   * burst), or undefined when Redis could not answer (fail open).
   */
  take(keyId: string, cost?: number): Promise<RateDecision | undefined>;
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

  const run = async (key: string, costs: number[]): Promise<unknown> => {
    try {
      return await redis.evalsha(GCRA_SHA, 1, key, interval, burst, costs.length, ...costs);
    } catch (err) {
      if (!String(err).includes("NOSCRIPT")) throw err;
      return await redis.eval(GCRA, 1, key, interval, burst, costs.length, ...costs);
    }
  };

  const decision = (reply: unknown[], i: number): RateDecision => {
    const [allowed, remaining, retryUs, resetUs] = [reply[i], reply[i + 1], reply[i + 2], reply[i + 3]].map(Number) as [
      number,
      number,
      number,
      number,
    ];
    return {
      allowed: allowed === 1,
      limit: burst,
      remaining: Math.max(0, remaining),
      resetSeconds: Math.ceil(resetUs / 1_000_000),
      retryAfterSeconds: allowed === 1 ? 0 : Math.max(1, Math.ceil(retryUs / 1_000_000)),
    };
  };

  type Waiter = { cost: number; resolve: (d: RateDecision | undefined) => void };

  // One script call per key and event-loop turn instead of one per request: under load the Redis round trip (and
  // ioredis' per-command work) was the gateway's largest cost. Each request still gets its own GCRA decision.
  const send = async (key: string, waiters: Waiter[]): Promise<void> => {
    let timer: Timer | undefined;
    try {
      const timeout = new Promise<undefined>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      });
      const reply = await Promise.race([run(key, waiters.map((w) => w.cost)), timeout]);
      if (!Array.isArray(reply) || reply.length !== waiters.length * 4) {
        for (const w of waiters) w.resolve(undefined);
        return;
      }
      waiters.forEach((w, i) => w.resolve(decision(reply, i * 4)));
    } catch (err) {
      opts.onFailure?.(err);
      for (const w of waiters) w.resolve(undefined);
    } finally {
      clearTimeout(timer);
    }
  };

  let pending = new Map<string, Waiter[]>();
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const batches = pending;
    pending = new Map();
    for (const [key, waiters] of batches) void send(key, waiters);
  };

  return {
    take(keyId, cost = 1) {
      // While disconnected, ioredis would queue the command until it reconnects: answer at once instead.
      if (redis.status !== "ready") return Promise.resolve(undefined);
      const key = `${opts.prefix}ratelimit:{${keyId}}`;
      return new Promise<RateDecision | undefined>((resolve) => {
        let waiters = pending.get(key);
        if (!waiters) pending.set(key, (waiters = []));
        waiters.push({ cost: Math.min(burst, Math.max(1, Math.ceil(cost))), resolve });
        if (waiters.length >= MAX_BATCH) {
          pending.delete(key);
          void send(key, waiters);
        } else if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
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
