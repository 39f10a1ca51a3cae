// Redis clients. Keys carry a prefix (REDIS_PREFIX) so deployments and test runs never collide; tests also pick
// their own DB number through REDIS_URL (redis://127.0.0.1:6379/7).
import Redis, { type RedisOptions } from "ioredis";

export type { Redis };

/** `overrides` for a client with special needs (e.g. auto-pipelining for the gateway's rate limiter). */
export function openRedis(url: string, overrides: RedisOptions = {}): Redis {
  return new Redis(url, {
    // Fail fast while Redis is down so Redis-only checks can fail open instead of queueing forever.
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    connectTimeout: 2_000,
    retryStrategy: (times) => Math.min(times * 100, 1_000),
    lazyConnect: false,
    ...overrides,
  });
}
