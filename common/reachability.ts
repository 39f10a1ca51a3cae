// What an operator reads when PostgreSQL or Redis cannot be reached: one line naming the address tried and the
// variable that sets it, instead of a driver's stack trace (or one per reconnect attempt).
import { connect } from "node:net";
import type { Logger } from "./logger.ts";

export interface Endpoint {
  host: string;
  port: number;
}

/** Host and port of a postgres:// or redis:// URL (the scheme's default port when none is given). */
function endpointOf(url: string, defaultPort: number): Endpoint | undefined {
  try {
    const u = new URL(url);
    if (!u.hostname) return undefined;
    return { host: u.hostname.replace(/^\[|\]$/g, ""), port: u.port ? Number(u.port) : defaultPort };
  } catch {
    return undefined;
  }
}

/** undefined when something accepts a TCP connection there, else why not. */
function tcpReason(endpoint: Endpoint, timeoutMs = 3_000): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host: endpoint.host, port: endpoint.port });
    const finish = (reason: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(reason);
    };
    const timer = setTimeout(() => finish(`no answer within ${timeoutMs} ms`), timeoutMs);
    socket.once("connect", () => finish(undefined));
    socket.once("error", (err: NodeJS.ErrnoException) => finish(err.code === "ECONNREFUSED" ? "connection refused" : err.code ?? err.message));
  });
}

const POSTGRES_DEFAULT_PORT = 5432;
const REDIS_DEFAULT_PORT = 6379;

/**
 * At start: PostgreSQL is the truth, so a service cannot run without it. When nothing answers at DATABASE_URL's
 * address, says so in one line and returns false (the caller exits).
 */
export async function postgresReachable(databaseUrl: string, log: Logger): Promise<boolean> {
  const endpoint = endpointOf(databaseUrl, POSTGRES_DEFAULT_PORT);
  // A Unix socket (no host in the URL) is left to the driver.
  if (!endpoint) return true;
  const reason = await tcpReason(endpoint);
  if (reason === undefined) return true;
  log.error(
    `PostgreSQL not reachable at ${endpoint.host}:${endpoint.port} (${reason}): set DATABASE_URL to a reachable server`,
    { variable: "DATABASE_URL", host: endpoint.host, port: endpoint.port },
  );
  return false;
}

const REDIS_REPORT_INTERVAL_MS = 60_000;
const redisReports = new Map<string, number>();

/**
 * A Redis client's connection error: one line per address per minute for the whole process (every service in one
 * process keeps its own clients), naming REDIS_URL. The services ride the outage out and reconnect on their own.
 */
export function reportRedisUnreachable(redisUrl: string, err: unknown, log: Logger): void {
  const endpoint = endpointOf(redisUrl, REDIS_DEFAULT_PORT);
  const where = endpoint ? `${endpoint.host}:${endpoint.port}` : "(REDIS_URL)";
  const last = redisReports.get(where);
  if (last !== undefined && Date.now() - last < REDIS_REPORT_INTERVAL_MS) return;
  redisReports.set(where, Date.now());
  const e = err as NodeJS.ErrnoException | undefined;
  const reason = e?.code === "ECONNREFUSED" ? "connection refused" : (e?.code ?? e?.message ?? String(err));
  log.warn(`Redis not reachable at ${where} (${reason}): set REDIS_URL to a reachable server; retrying meanwhile`, {
    variable: "REDIS_URL",
    ...(endpoint ?? {}),
  });
}
