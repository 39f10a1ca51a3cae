// Loaded once before any test file (bunfig.toml): says where this run's Redis keys go, and stops the run at once
// when TEST_REDIS_DBS cannot be read rather than in the first file that needs Redis. The services in the test
// process log at warn unless LOG_LEVEL says otherwise: an access line per request would bury the test report.
import { setLogLevel } from "../../common/logger.ts";
import { describeTestRedis, parseRedisDbs, TEST_REDIS_DBS_SPEC } from "./redis.ts";

if (!process.env.LOG_LEVEL) setLogLevel("warn");

parseRedisDbs(TEST_REDIS_DBS_SPEC);
console.log(describeTestRedis());
