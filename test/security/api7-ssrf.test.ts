// OWASP API7:2023 Server Side Request Forgery. Proves: a destination URL naming, in any spelling, an address that is
// not globally routable (loopback, RFC 1918, link-local and cloud metadata, CGNAT, 0/8, IPv6 loopback/ULA/link-local,
// IPv4 inside IPv6 (mapped, NAT64, 6to4), decimal/octal/hex IPv4 forms) or a host resolving to one (any of its
// addresses) is refused at request time with 400 ssrf_blocked {ip, cidr}, on create and on replace, changing nothing;
// at delivery the host is resolved again and checked on every attempt, so a host that rebinds to a blocked address
// after creation is never connected to; and a destination's redirect is not followed. Mechanisms: common/ssrf.ts
// (checkDestinationUrl at request time, resolvePinned: connect to the checked address), the deliverer's HTTPS sender
// (no redirects). Queue destinations name operator-registered brokers only (docs/destinations.md).
// Deeper: test/unit/common/ssrf.test.ts (the full table of forms and ranges, SSRF_ALLOW_CIDRS), api.hostile.test.ts (URLs the
// WHATWG parser rewrites), deliverer.hostile.test.ts, brokers.security.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { staticResolver } from "../../common/ssrf.ts";
import { call, startEventsStack, type EventsStack } from "../support/events.ts";
import { TEST_HOSTS } from "../support/stack.ts";
import { until } from "../support/wait.ts";

let env: EventsStack;
let base: string;
let key: string;
// The trap: an HTTPS server on 127.0.0.2 (loopback, but outside SSRF_ALLOW_CIDRS=127.0.0.1/32). A blocked attempt
// that still connected would land here.
let trap: Server;
let trapHits = 0;
let trapPort: number;

beforeAll(async () => {
  env = await startEventsStack({
    resolver: staticResolver({
      ...TEST_HOSTS,
      localhost: ["127.0.0.1"],
      "internal.example.com": ["10.1.2.3"],
      "loopback.example.com": ["127.0.0.2"],
      "mixed.example.com": ["93.184.216.34", "10.9.9.9"],
      "metadata.example.com": ["169.254.169.254"],
      "rebind.example.com": ["93.184.216.34"],
    }),
    deliverer: {
      targetTtlMs: 0,
      worker: { holdCheckMs: 200 },
      // At delivery time the name answers the trap's address: DNS rebinding.
      resolver: staticResolver({ localhost: ["127.0.0.1"], "rebind.example.com": ["127.0.0.2"] }),
    },
  });
  base = env.stack.baseUrl;
  key = (await env.stack.createKey()).key;
  trap = createServer({ cert: env.pki.cert, key: env.pki.key }, (_req, res) => {
    trapHits++;
    res.writeHead(200).end("ok");
  });
  await new Promise<void>((resolve) => trap.listen(0, "127.0.0.2", resolve));
  trapPort = (trap.address() as AddressInfo).port;
}, 60_000);

afterAll(async () => {
  trap?.close();
  await env?.stop();
}, 60_000);

const BLOCKED: [url: string, ip: string][] = [
  // 127.0.0.1 itself is the test receiver's, allowed by SSRF_ALLOW_CIDRS=127.0.0.1/32 here; the rest of 127/8 is not.
  ["https://127.0.0.2/h", "127.0.0.2"],
  ["https://loopback.example.com/h", "127.0.0.2"],
  ["https://10.0.0.5/h", "10.0.0.5"],
  ["https://172.16.0.1/h", "172.16.0.1"],
  ["https://192.168.1.1/h", "192.168.1.1"],
  ["https://169.254.169.254/latest/meta-data/", "169.254.169.254"],
  ["https://metadata.example.com/computeMetadata/v1/", "169.254.169.254"],
  ["https://100.64.0.1/h", "100.64.0.1"],
  ["https://0.0.0.0/h", "0.0.0.0"],
  ["https://2130706434/h", "127.0.0.2"],
  ["https://0177.0.0.2/h", "127.0.0.2"],
  ["https://0x7f.0.0.2/h", "127.0.0.2"],
  ["https://127.2/h", "127.0.0.2"],
  ["https://167772165/h", "10.0.0.5"],
  ["https://[::1]/h", "::1"],
  ["https://[::ffff:127.0.0.2]/h", "127.0.0.2"],
  ["https://[::ffff:a9fe:a9fe]/h", "169.254.169.254"],
  ["https://[64:ff9b::a00:1]/h", "10.0.0.1"],
  ["https://[2002:a00:1::1]/h", "10.0.0.1"],
  ["https://[fd00:ec2::254]/h", "fd00:ec2::254"],
  ["https://[fe80::1]/h", "fe80::1"],
  ["https://internal.example.com/h", "10.1.2.3"],
  ["https://mixed.example.com/h", "10.9.9.9"],
];

describe("request time: a blocked destination is refused and nothing changes", () => {
  for (const [url, ip] of BLOCKED) {
    test(`${url} → ssrf_blocked ${ip}`, async () => {
      const res = await call<{ error: string; detail: { ip: string; cidr: string } }>(base, key, "POST", "/v1/subscriptions", {
        destination: { type: "https", url },
        events: ["service.ping"],
      });
      expect([res.status, res.body.error, res.body.detail?.ip]).toEqual([400, "ssrf_blocked", ip]);
      expect(res.body.detail.cidr).toMatch(/\/\d+$/);
    });
  }

  test("nothing was created; a replace to a blocked URL keeps the old one", async () => {
    expect((await call<{ items: unknown[] }>(base, key, "GET", "/v1/subscriptions")).body.items).toEqual([]);
    const made = await call<{ id: string; destination: { url: string } }>(base, key, "POST", "/v1/subscriptions", {
      destination: { type: "https", url: "https://hooks.example.com/ok" },
      events: ["service.ping"],
    });
    expect(made.status).toBe(201);
    const put = await call<{ error: string }>(base, key, "PUT", `/v1/subscriptions/${made.body.id}`, {
      destination: { type: "https", url: "https://169.254.169.254/" },
      events: ["service.ping"],
    });
    expect([put.status, put.body.error]).toEqual([400, "ssrf_blocked"]);
    const got = await call<{ destination: { url: string } }>(base, key, "GET", `/v1/subscriptions/${made.body.id}`);
    expect(got.body.destination.url).toBe("https://hooks.example.com/ok");
    expect((await call(base, key, "DELETE", `/v1/subscriptions/${made.body.id}`)).status).toBe(204);
  });
});

type Ev = { status: string; attempts: number; responseStatus: number | null; responseBody: string | null };

async function finished(k: string, subId: string, eventId: string): Promise<Ev> {
  return until("the event failed", async () => {
    const res = await call<Ev>(base, k, "GET", `/v1/subscriptions/${subId}/events/${eventId}`);
    return res.body.status === "failed" ? res.body : null;
  }, 30_000);
}

describe("delivery time", () => {
  test("DNS rebinding: a host public at creation and blocked at delivery is never connected to", async () => {
    const { key: k } = await env.stack.createKey();
    const sub = await call<{ id: string }>(base, k, "POST", "/v1/subscriptions", {
      destination: { type: "https", url: `https://rebind.example.com:${trapPort}/h` },
      events: ["service.ping"],
    });
    expect(sub.status).toBe(201);
    const ev = await call<{ id: string }>(base, k, "POST", `/v1/subscriptions/${sub.body.id}/test`);
    const done = await finished(k, sub.body.id, ev.body.id);
    expect(done.attempts).toBe(7);
    expect(done.responseStatus).toBeNull();
    expect(done.responseBody).toContain("127.0.0.2");
    expect(trapHits).toBe(0);
  });

  test("a redirect is not followed: the 3xx is a failed attempt and its Location is never requested", async () => {
    let landed = 0;
    const redirector = createServer({ cert: env.pki.cert, key: env.pki.key }, (req, res) => {
      if (req.url === "/landed") landed++;
      res.writeHead(302, { location: `https://localhost:${(redirector.address() as AddressInfo).port}/landed` }).end();
    });
    await new Promise<void>((resolve) => redirector.listen(0, "127.0.0.1", resolve));
    try {
      const { key: k } = await env.stack.createKey();
      const sub = await call<{ id: string }>(base, k, "POST", "/v1/subscriptions", {
        destination: { type: "https", url: `https://localhost:${(redirector.address() as AddressInfo).port}/start` },
        events: ["service.ping"],
      });
      expect(sub.status).toBe(201);
      const ev = await call<{ id: string }>(base, k, "POST", `/v1/subscriptions/${sub.body.id}/test`);
      const done = await finished(k, sub.body.id, ev.body.id);
      expect(done.responseStatus).toBe(302);
      expect(landed).toBe(0);
    } finally {
      redirector.close();
    }
  });
});
