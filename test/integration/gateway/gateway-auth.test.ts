// The gateway's key cache and the limit on lookups of unknown keys (gateway/auth.ts, gateway/client-limit.ts), against
// the real registry; a wrapper around its transport counts the lookups that reach it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { SQL } from "bun";
import { createClient, type Transport } from "@connectrpc/connect";
import { inProcessTransport } from "../../../common/rpc.ts";
import { createAuthenticator } from "../../../gateway/auth.ts";
import { clientKey, createClientLimiter } from "../../../gateway/client-limit.ts";
import { ApiKeyService } from "../../../gen/webhooks/registry/v1/registry_pb.ts";
import { startStack, type Stack } from "../../support/stack.ts";

let stack: Stack;
let transport: Transport;
let lookups = 0;

beforeAll(async () => {
  stack = await startStack();
  const inner = inProcessTransport(stack.registry.routes);
  transport = {
    unary: (...args) => {
      lookups++;
      return inner.unary(...args);
    },
    stream: (...args) => inner.stream(...args),
  };
}, 60_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

const bearer = (secret: string) => `Bearer ${secret}`;
const randomKey = () => "whk_" + randomBytes(32).toString("base64url");
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => "ok",
    (e: { code?: string; detail?: unknown }) => `${e.code} ${JSON.stringify(e.detail)}`,
  );

describe("the key cache", () => {
  test("a flood of unknown keys never evicts a valid one", async () => {
    const key = await stack.createKey();
    const auth = createAuthenticator(transport, { cacheMs: 60_000, maxEntries: 50 });
    await auth.authenticate(bearer(key.key));
    for (let i = 0; i < 200; i++) expect(await codeOf(auth.authenticate(bearer(randomKey())))).toStartWith("unauthorized");
    const before = lookups;
    expect((await auth.authenticate(bearer(key.key))).keyId).toBe(key.id);
    expect(lookups - before).toBe(0);
  });

  test("valid keys are evicted by recency: one in use outlives ones idle since", async () => {
    const auth = createAuthenticator(transport, { cacheMs: 60_000, maxEntries: 3 });
    const [a, b, c, d] = await Promise.all([stack.createKey(), stack.createKey(), stack.createKey(), stack.createKey()]);
    for (const k of [a!, b!, c!]) await auth.authenticate(bearer(k.key));
    await auth.authenticate(bearer(a!.key)); // a is now the most recent; b the least
    await auth.authenticate(bearer(d!.key)); // evicts b
    const before = lookups;
    await auth.authenticate(bearer(a!.key));
    expect(lookups - before).toBe(0);
    await auth.authenticate(bearer(b!.key));
    expect(lookups - before).toBe(1);
  });

  test("an unknown key is remembered briefly: asked again, no second lookup", async () => {
    const auth = createAuthenticator(transport, { cacheMs: 60_000 });
    const secret = randomKey();
    const before = lookups;
    for (let i = 0; i < 5; i++) expect(await codeOf(auth.authenticate(bearer(secret)))).toStartWith("unauthorized");
    expect(lookups - before).toBe(1);
  });
});

describe("the limit on lookups of unknown keys, per client address", () => {
  test("past the burst: rate_limited with retryAfterSeconds and no lookup; other addresses and known keys unaffected", async () => {
    const key = await stack.createKey();
    const auth = createAuthenticator(transport, { cacheMs: 60_000, lookupLimiter: createClientLimiter({ rps: 0.5, burst: 3 }) });
    await auth.authenticate(bearer(key.key), "10.0.0.1"); // one of the burst
    for (let i = 0; i < 2; i++) expect(await codeOf(auth.authenticate(bearer(randomKey()), "10.0.0.1"))).toStartWith("unauthorized");
    const before = lookups;
    expect(await codeOf(auth.authenticate(bearer(randomKey()), "10.0.0.1"))).toBe('rate_limited {"retryAfterSeconds":2}');
    expect(lookups - before).toBe(0);
    expect((await auth.authenticate(bearer(key.key), "10.0.0.1")).keyId).toBe(key.id);
    expect(await codeOf(auth.authenticate(bearer(randomKey()), "10.0.0.2"))).toStartWith("unauthorized");
    // Malformed tokens cost no lookup and are not limited.
    expect(await codeOf(auth.authenticate(bearer("whk_short"), "10.0.0.1"))).toStartWith("unauthorized");
  });

  test("a known key's refresh after the cache lifetime skips the limit; a revocation still takes effect", async () => {
    const key = await stack.createKey();
    const auth = createAuthenticator(transport, { cacheMs: 200, lookupLimiter: createClientLimiter({ rps: 0.001, burst: 1 }) });
    await auth.authenticate(bearer(key.key), "10.0.0.9");
    expect(await codeOf(auth.authenticate(bearer(randomKey()), "10.0.0.9"))).toStartWith("rate_limited");
    await Bun.sleep(300);
    const before = lookups;
    expect((await auth.authenticate(bearer(key.key), "10.0.0.9")).keyId).toBe(key.id);
    expect(lookups - before).toBe(1);
    await createClient(ApiKeyService, transport).revokeApiKey({ id: key.id });
    await Bun.sleep(300);
    expect(await codeOf(auth.authenticate(bearer(key.key), "10.0.0.9"))).toStartWith("unauthorized");
  });

  test("client addresses: an IPv6 client is its /64, an IPv4-mapped address its IPv4 one", () => {
    expect(clientKey("2001:db8:1:2:aaaa::1")).toBe(clientKey("2001:db8:1:2:ffff:1:2:3"));
    expect(clientKey("2001:db8:1:2::1")).not.toBe(clientKey("2001:db8:1:3::1"));
    expect(clientKey("2001:0db8:0001:0002:0:0:0:1")).toBe(clientKey("2001:db8:1:2::9"));
    expect(clientKey("::ffff:192.0.2.7")).toBe("192.0.2.7");
    expect(clientKey("::1")).toBe("0:0:0:0::/64");
    expect(clientKey(undefined)).toBe("unknown");
  });

  test("the limiter forgets the least recently seen clients beyond its bound, and refills at its rate", () => {
    let t = 0;
    const limiter = createClientLimiter({ rps: 1, burst: 2, maxClients: 2, now: () => t });
    expect([limiter.take("a"), limiter.take("a"), limiter.take("a")].map((d) => d.allowed)).toEqual([true, true, false]);
    t += 1_000;
    expect(limiter.take("a").allowed).toBe(true);
    limiter.take("b");
    limiter.take("c"); // forgets a (least recently seen), which starts full again
    expect([limiter.take("a"), limiter.take("a")].map((d) => d.allowed)).toEqual([true, true]);
  });
});

describe("readiness", () => {
  test("does not wait on the key lookups' pool: with every lookup stuck, /readyz answers 200", async () => {
    const sql = new SQL(stack.database.url, { max: 1 });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    // Every key lookup reads api_keys: an exclusive lock holds each one (and the read pool's connections) until
    // the transaction ends.
    const tx = sql.begin(async (t) => {
      await t`LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE`;
      locked();
      await held;
    });
    try {
      await isLocked;
      const stuck = Array.from({ length: 8 }, () =>
        fetch(`${stack.baseUrl}/v1/subscriptions`, { headers: { authorization: bearer(randomKey()) } }).then((r) => r.status),
      );
      await Bun.sleep(200);
      const ready = await fetch(`${stack.baseUrl}/readyz`);
      expect(`${ready.status} ${await ready.text()}`).toStartWith("200 ");
      release();
      await tx;
      // The lookups finish once the lock is gone (or ran out of their deadline: never a wrong answer).
      for (const status of await Promise.all(stuck)) expect([401, 503]).toContain(status);
    } finally {
      release();
      await tx.catch(() => {});
      await sql.close();
    }
  }, 30_000);
});
