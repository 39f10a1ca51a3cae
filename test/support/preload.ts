// Loaded once before any test file (bunfig.toml): says where this run's Redis keys go, and stops the run at once
// when TEST_REDIS_DBS cannot be read rather than in the first file that needs Redis.
import { describeTestRedis, parseRedisDbs, TEST_REDIS_DBS_SPEC } from "./redis.ts";

parseRedisDbs(TEST_REDIS_DBS_SPEC);
console.log(describeTestRedis());
