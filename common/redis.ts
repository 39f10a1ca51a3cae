// Redis clients. Keys carry a prefix (REDIS_PREFIX) so deployments and test runs never collide; tests also pick
// their own DB number through REDIS_URL (redis://127.0.0.1:6379/7).
import Redis, { type RedisOptions } from "ioredis";
import { log } from "./logger.ts";
import { reportRedisUnreachable } from "./reachability.ts";

export type { Redis };

/** `overrides` for a client with special needs (e.g. auto-pipelining for the gateway's rate limiter). */
export function openRedis(url: string, overrides: RedisOptions = {}): Redis {
  const client = new Redis(url, {
    // Fail fast while Redis is down so Redis-only checks can fail open instead of queueing forever.
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    connectTimeout: 2_000,
    retryStrategy: (times) => Math.min(times * 100, 1_000),
    lazyConnect: false,
    ...overrides,
  });
  // Without a listener ioredis prints every reconnect failure with its stack; this says it once a minute instead.
  client.on("error", (err) => reportRedisUnreachable(url, err, log));
  return client;
}
