// What operators read (common/logger.ts captured through its sink): the access log at info with the status actually
// sent, delivery attempts (failures at info, successes at debug), and one line naming the variable to set when
// PostgreSQL, Redis or a TRON node cannot be reached — never a stack trace per retry.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { metrics } from "../../../common/http-service.ts";
import { setLogLevel, setLogSink, type LogLevel } from "../../../common/logger.ts";
import { openRedis } from "../../../common/redis.ts";
import { networkTransport } from "../../../common/rpc.ts";
import { createGatewayApp } from "../../../gateway/app.ts";
import { startDeliveryBed, waitForEvent, type DeliveryBed, enqueueTransfers } from "../../support/delivery.ts";
import { freePorts } from "../../support/ports.ts";
import { startStack, type Stack } from "../../support/stack.ts";
import { until } from "../../support/wait.ts";

const ROOT = join(import.meta.dir, "..", "..", "..");
type Line = Record<string, unknown> & { level: string; msg: string };

let lines: string[] = [];
let restoreSink: ((line: string) => void) | undefined;
let restoreLevel: LogLevel | undefined;

beforeAll(() => {
  restoreSink = setLogSink((line) => lines.push(line));
  // What a deployment runs with unless it sets LOG_LEVEL.
  restoreLevel = setLogLevel("info");
});
afterAll(() => {
  if (restoreLevel) setLogLevel(restoreLevel);
  if (restoreSink) setLogSink(restoreSink);
});

const parsed = (): Line[] => lines.map((l) => JSON.parse(l) as Line);
const deadPort = () => freePorts(1)[0]!;


describe("access log", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  test("one line per request at info: method, route, status, ms, key id, request id", async () => {
    const issued = await stack.createKey();
    lines = [];
    const res = await fetch(`${stack.baseUrl}/v1/subscriptions?limit=5`, {
      headers: { authorization: `Bearer ${issued.key}`, "x-request-id": "access-log-1" },
    });
    expect(res.status).toBe(200);
    await until("the access line", async () => parsed().some((l) => l.requestId === "access-log-1"));
    const mine = parsed().filter((l) => l.requestId === "access-log-1");
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ level: "info", msg: "request", method: "GET", route: "/v1/subscriptions", status: 200, keyId: issued.id });
    expect(typeof mine[0]!.ms).toBe("number");
    expect(JSON.stringify(mine[0])).not.toContain("limit=5");
  });

  test("a /readyz answered 503 is logged and counted as 503", async () => {
    const gateway = createGatewayApp({ config: stack.config, registry: networkTransport(`http://127.0.0.1:${deadPort()}`, { token: undefined, timeoutMs: 1_000 }) });
    gateway.listen({ port: 0, hostname: "127.0.0.1" });
    try {
      lines = [];
      const res = await fetch(`http://127.0.0.1:${gateway.server!.port}/readyz`, { headers: { "x-request-id": "readyz-503" } });
      expect(res.status).toBe(503);
      await until("the access line", async () => parsed().some((l) => l.requestId === "readyz-503"));
      expect(parsed().find((l) => l.requestId === "readyz-503")).toMatchObject({ route: "/readyz", status: 503 });
      expect(await metrics.metrics()).toMatch(/gateway_http_requests_total\{method="GET",route="\/readyz",status="503"\} [1-9]/);
    } finally {
      await gateway.stop(true);
    }
  });
});

describe("delivery attempts", () => {
  let bed: DeliveryBed;
  beforeAll(async () => {
    bed = await startDeliveryBed({ env: { RETRY_SCHEDULE: "0,50ms" } });
  });
  afterAll(async () => {
    await bed?.stop();
  });

  test("a failure at info (event id, host, status, error, ms); a success at debug only", async () => {
    const failing = await bed.subscribe("/failing");
    bed.receiver.setBehaviour("/failing", { kind: "status", status: 500 });
    const fine = await bed.subscribe("/fine");
    lines = [];
    const [bad] = (await enqueueTransfers(bed, failing.subscriptionId, 1, 0)).ids;
    const [good] = (await enqueueTransfers(bed, fine.subscriptionId, 1, 1)).ids;
    await waitForEvent(bed, { keyId: failing.keyId, subscriptionId: failing.subscriptionId, eventId: bad! }, (e) => e.status === "failed");
    await waitForEvent(bed, { keyId: fine.keyId, subscriptionId: fine.subscriptionId, eventId: good! }, (e) => e.status === "delivered");

    const failures = parsed().filter((l) => l.eventId === bad && l.msg === "delivery attempt failed");
    expect(failures).toHaveLength(2);
    for (const f of failures) {
      expect(f).toMatchObject({ level: "info", status: 500, error: "http" });
      expect(typeof f.ms).toBe("number");
      // The destination's host and port, never its path.
      expect(f.host).toMatch(/^localhost:\d+$/);
      expect(JSON.stringify(f)).not.toContain("/failing");
    }
    // At info a success leaves no line.
    expect(parsed().filter((l) => l.eventId === good)).toEqual([]);
  });

  test("at debug, a success is one line with its status", async () => {
    const fine = await bed.subscribe("/fine-debug");
    const prev = setLogLevel("debug");
    try {
      lines = [];
      const [id] = (await enqueueTransfers(bed, fine.subscriptionId, 1, 2)).ids;
      await waitForEvent(bed, { keyId: fine.keyId, subscriptionId: fine.subscriptionId, eventId: id! }, (e) => e.status === "delivered");
      await until("the attempt line", async () => parsed().some((l) => l.eventId === id && l.msg === "delivery attempt"));
      expect(parsed().find((l) => l.eventId === id && l.msg === "delivery attempt")).toMatchObject({ level: "debug", host: expect.stringMatching(/^localhost:\d+$/), status: 200 });
    } finally {
      setLogLevel(prev);
    }
  });
});

describe("unreachable dependencies", () => {
  test("Redis: one line per address per minute naming REDIS_URL, whatever the number of clients and retries", async () => {
    const port = deadPort();
    lines = [];
    const clients = [openRedis(`redis://127.0.0.1:${port}`), openRedis(`redis://127.0.0.1:${port}/3`)];
    try {
      await until("the Redis line", async () => lines.some((l) => l.includes(`127.0.0.1:${port}`)));
      // Several reconnect attempts later (retries every 100 ms–1 s), still one line.
      await Bun.sleep(1_500);
      const about = parsed().filter((l) => JSON.stringify(l).includes(String(port)));
      expect(about).toHaveLength(1);
      expect(about[0]).toMatchObject({ level: "warn", variable: "REDIS_URL", host: "127.0.0.1", port });
      expect(about[0]!.msg).toContain("REDIS_URL");
      expect(JSON.stringify(about[0])).not.toContain("stack");
    } finally {
      for (const c of clients) c.disconnect();
    }
  });

  test("PostgreSQL at start: one line naming the address and DATABASE_URL, then the process exits", async () => {
    const port = deadPort();
    const proc = Bun.spawn([process.execPath, join(ROOT, "cli", "start.ts")], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/webhooks`, LOG_LEVEL: "info" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const timer = setTimeout(() => proc.kill("SIGKILL"), 20_000);
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    clearTimeout(timer);
    expect(code).toBe(1);
    const output = (out + err).trim().split("\n");
    expect(output).toHaveLength(1);
    const line = JSON.parse(output[0]!) as Line;
    expect(line).toMatchObject({ level: "error", variable: "DATABASE_URL", host: "127.0.0.1", port });
    expect(line.msg).toContain(`127.0.0.1:${port}`);
    expect(line.msg).toContain("DATABASE_URL");
  }, 30_000);
});
