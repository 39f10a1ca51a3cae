// OWASP API2:2023 Broken Authentication. Proves: every way of not presenting a valid key (none, another scheme, a
// malformed token, a well-shaped unknown key, a revoked key, the key in the query string) gets the same 401
// unauthorized body (one message for "no key", one for any presented token, revoked included) with
// `WWW-Authenticate: Bearer`, before routing (an unknown /v1 path is 401 too, not 404); a revocation takes effect within the gateway's key-cache lifetime; the database keeps only a hash of each key; and no
// log line carries a key. Mechanisms: gateway/auth.ts (Bearer parsing, shape check, bounded cache), the registry's
// ResolveApiKey (SHA-256 lookup), common/logger.ts (masking).
// Deeper: test/integration/gateway/gateway-auth.test.ts (cache, per-address limit of unknown keys), api.flood.test.ts,
// keys-cli.test.ts, logs.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { SQL } from "bun";
import { createClient } from "@connectrpc/connect";
import { inProcessTransport } from "../../common/rpc.ts";
import { setLogLevel, setLogSink, type LogLevel } from "../../common/logger.ts";
import { ApiKeyService } from "../../gen/webhooks/registry/v1/registry_pb.ts";
import { startStack, type Stack, type TestKey } from "../support/stack.ts";
import { until } from "../support/wait.ts";

const CACHE_MS = 300;
let invalidKeyMessage = "";
let stack: Stack;
let key: TestKey;
const lines: string[] = [];
let previousSink: (line: string) => void;
let previousLevel: LogLevel;

beforeAll(async () => {
  previousSink = setLogSink((line) => lines.push(line));
  previousLevel = setLogLevel("debug");
  stack = await startStack({ authCacheMs: CACHE_MS });
  key = await stack.createKey();
}, 60_000);

afterAll(async () => {
  setLogSink(previousSink);
  setLogLevel(previousLevel);
  await stack?.stop();
}, 60_000);

const randomKey = () => "whk_" + randomBytes(32).toString("base64url");

async function get(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(stack.baseUrl + path, { headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text };
}

/** The 401 as a client sees it, minus the per-request id. */
function refusal(res: { status: number; headers: Headers; text: string }): Record<string, unknown> {
  const body = JSON.parse(res.text) as Record<string, unknown>;
  expect(body.requestId).toBe(res.headers.get("x-request-id"));
  const { requestId: _, ...rest } = body;
  return { status: res.status, wwwAuthenticate: res.headers.get("www-authenticate"), ...rest };
}

describe("no valid key, one answer", () => {
  test("the control: the issued key is served", async () => {
    expect((await get("/v1/subscriptions", { authorization: `Bearer ${key.key}` })).status).toBe(200);
    expect((await get("/v1/subscriptions", { authorization: `bEaReR ${key.key}` })).status).toBe(200);
  });

  test("missing, other scheme, malformed, unknown, truncated, doubled, in the query string: identical 401s", async () => {
    const expected = {
      status: 401,
      wwwAuthenticate: "Bearer",
      error: "unauthorized",
      message: expect.any(String),
      detail: null,
    };
    const attempts: [string, Record<string, string>][] = [
      ["/v1/subscriptions", {}],
      ["/v1/subscriptions", { authorization: `Basic ${Buffer.from(`${key.key}:`).toString("base64")}` }],
      ["/v1/subscriptions", { authorization: key.key }],
      ["/v1/subscriptions", { authorization: "Bearer " }],
      ["/v1/subscriptions", { authorization: "Bearer whk_short" }],
      ["/v1/subscriptions", { authorization: `Bearer ${key.key.slice(0, -1)}` }],
      ["/v1/subscriptions", { authorization: `Bearer ${key.key.slice(0, -1)}${key.key.endsWith("A") ? "B" : "A"}` }],
      ["/v1/subscriptions", { authorization: `Bearer ${key.key} ${key.key}` }],
      ["/v1/subscriptions", { authorization: `Bearer ${randomKey()}` }],
      ["/v1/subscriptions", { authorization: `Bearer ${key.key.replace("whk_", "WHK_")}` }],
      [`/v1/subscriptions?api_key=${key.key}`, {}],
      [`/v1/subscriptions?access_token=${key.key}`, {}],
      ["/v1/no-such-route", {}],
      ["/v1/subscriptions/sub_01J00000000000000000000000", { authorization: `Bearer ${randomKey()}` }],
    ];
    const answers = [];
    for (const [path, headers] of attempts) answers.push(refusal(await get(path, headers)));
    for (const a of answers) expect(a).toEqual(expected);
    // Two messages only: "no key presented" and one for every presented token, so the answer never tells a malformed
    // token from an unknown one or (below) a revoked one.
    const presented = answers.filter((_, i) => Object.keys(attempts[i]![1]).length > 0);
    expect(new Set(presented.map((a) => a.message)).size).toBe(1);
    expect(new Set(answers.map((a) => a.message)).size).toBe(2);
    invalidKeyMessage = presented[0]!.message as string;
  });

  test("a revoked key stops working within the key-cache lifetime", async () => {
    const doomed = await stack.createKey();
    const auth = { authorization: `Bearer ${doomed.key}` };
    expect((await get("/v1/subscriptions", auth)).status).toBe(200);
    await createClient(ApiKeyService, inProcessTransport(stack.registry.routes, "operator")).revokeApiKey({ id: doomed.id });
    const revokedAt = Date.now();
    const refused = await until("the revoked key refused", async () => {
      const res = await get("/v1/subscriptions", auth);
      return res.status === 401 ? res : null;
    }, 10_000, 25);
    // The gateway may serve its cached answer for one cache lifetime, never longer (slack for a loaded machine).
    expect(Date.now() - revokedAt).toBeLessThan(CACHE_MS + 5_000);
    expect(refusal(refused)).toEqual({ status: 401, wwwAuthenticate: "Bearer", error: "unauthorized", message: invalidKeyMessage, detail: null });
    // And it stays refused.
    await Bun.sleep(CACHE_MS + 50);
    expect((await get("/v1/subscriptions", auth)).status).toBe(401);
  });
});

describe("keys are never kept in the clear", () => {
  test("the database holds only a SHA-256 of the key, never the key", async () => {
    const sql = new SQL(stack.database.url, { max: 1 });
    try {
      const rows = (await sql`SELECT * FROM api_keys WHERE id = ${key.id}`) as Record<string, unknown>[];
      expect(rows).toHaveLength(1);
      expect(JSON.stringify(rows)).not.toContain(key.key);
      expect(JSON.stringify(rows)).not.toContain(key.key.slice(4));
      const hash = new Bun.CryptoHasher("sha256").update(key.key).digest("hex");
      expect(rows[0]!.secret_hash).toBe(hash);
    } finally {
      await sql.close();
    }
  });

  test("no log line, at debug level, carries a key that was presented (valid, unknown or in the URL)", async () => {
    const unknown = randomKey();
    await get("/v1/subscriptions", { authorization: `Bearer ${key.key}` });
    await get("/v1/subscriptions", { authorization: `Bearer ${unknown}` });
    await get(`/v1/nowhere?api_key=${unknown}`, { authorization: `Bearer ${unknown}` });
    expect(lines.length).toBeGreaterThan(0);
    const all = lines.join("\n");
    expect(all).not.toContain(key.key.slice(4));
    expect(all).not.toContain(unknown.slice(4));
  });
});
