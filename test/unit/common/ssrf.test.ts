// The SSRF policy against the URL forms attackers use, with a real (table-backed) resolver injected.
import { describe, expect, test } from "bun:test";
import { createSocket } from "node:dgram";
import { ApiError } from "../../../common/contract/index.ts";
import { startDnsServer } from "../../support/dns-server.ts";
import {
  DestinationError,
  checkDestinationUrl,
  createSsrfPolicy,
  createSystemResolver,
  judgeAddress,
  resolvePinned,
  staticResolver,
  type Resolver,
} from "../../../common/ssrf.ts";

// Names under .test (RFC 6761) so nothing here could reach a real host.
const resolver = staticResolver({
  "internal.corp.test": ["10.0.0.5"],
  "metadata.corp.test": ["169.254.169.254"],
  "v6only-private.corp.test": ["fd00::1234"],
  "mixed.corp.test": ["8.8.8.8", "192.168.0.10"],
  "rebind.corp.test": ["2606:4700:4700::1111", "::ffff:127.0.0.1"],
  "public.customer.test": ["8.8.8.8", "2606:4700:4700::1111"],
  "v6.customer.test": ["2606:4700:4700::1111"],
  "mapped.customer.test": ["::ffff:8.8.4.4"],
  "broken.customer.test": new Error("SERVFAIL"),
});
const policy = createSsrfPolicy({ allowCidrs: [], resolver });

async function apiErrorOf(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error("expected an ApiError, the promise resolved");
}

const BLOCKED: [url: string, ip: string, cidr: string][] = [
  // IPv4 in every spelling WHATWG URL normalizes
  ["https://127.0.0.1/", "127.0.0.1", "127.0.0.0/8"],
  ["https://2130706433/", "127.0.0.1", "127.0.0.0/8"],
  ["https://0x7f.1/", "127.0.0.1", "127.0.0.0/8"],
  ["https://0x7f000001/", "127.0.0.1", "127.0.0.0/8"],
  ["https://017700000001/", "127.0.0.1", "127.0.0.0/8"],
  ["https://0177.0.0.1/", "127.0.0.1", "127.0.0.0/8"],
  ["https://127.1/", "127.0.0.1", "127.0.0.0/8"],
  ["https://127.0.0.1.:8443/hook", "127.0.0.1", "127.0.0.0/8"],
  ["https://167772165/", "10.0.0.5", "10.0.0.0/8"],
  // RFC 1918, link-local, CGNAT, 0/8, 192.0.0/24
  ["https://10.0.0.5/", "10.0.0.5", "10.0.0.0/8"],
  ["https://172.16.0.1/", "172.16.0.1", "172.16.0.0/12"],
  ["https://172.31.255.255/", "172.31.255.255", "172.16.0.0/12"],
  ["https://192.168.1.1/", "192.168.1.1", "192.168.0.0/16"],
  ["https://169.254.169.254/latest/meta-data/", "169.254.169.254", "169.254.0.0/16"],
  ["https://100.64.0.1/", "100.64.0.1", "100.64.0.0/10"],
  ["https://100.127.255.254/", "100.127.255.254", "100.64.0.0/10"],
  ["https://0/", "0.0.0.0", "0.0.0.0/8"],
  ["https://0.1.2.3/", "0.1.2.3", "0.0.0.0/8"],
  ["https://192.0.0.8/", "192.0.0.8", "192.0.0.0/24"],
  // documentation and benchmarking
  ["https://192.0.2.1/", "192.0.2.1", "192.0.2.0/24"],
  ["https://198.51.100.7/", "198.51.100.7", "198.51.100.0/24"],
  ["https://203.0.113.9/", "203.0.113.9", "203.0.113.0/24"],
  ["https://198.18.0.1/", "198.18.0.1", "198.18.0.0/15"],
  ["https://198.19.255.255/", "198.19.255.255", "198.18.0.0/15"],
  // multicast, reserved, broadcast (the most specific range wins over 240/4)
  ["https://224.0.0.1/", "224.0.0.1", "224.0.0.0/4"],
  ["https://239.255.255.250/", "239.255.255.250", "224.0.0.0/4"],
  ["https://240.0.0.1/", "240.0.0.1", "240.0.0.0/4"],
  ["https://255.255.255.254/", "255.255.255.254", "240.0.0.0/4"],
  ["https://255.255.255.255/", "255.255.255.255", "255.255.255.255/32"],
  ["https://4294967295/", "255.255.255.255", "255.255.255.255/32"],
  // IPv4 embedded in IPv6 is judged by the IPv4 inside
  ["https://[::ffff:127.0.0.1]/", "127.0.0.1", "127.0.0.0/8"],
  ["https://[::ffff:7f00:1]/", "127.0.0.1", "127.0.0.0/8"],
  ["https://[0:0:0:0:0:ffff:a9fe:a9fe]/", "169.254.169.254", "169.254.0.0/16"],
  ["https://[::ffff:100.64.0.1]/", "100.64.0.1", "100.64.0.0/10"],
  ["https://[64:ff9b::10.0.0.1]/", "10.0.0.1", "10.0.0.0/8"],
  ["https://[64:ff9b::c0a8:101]/", "192.168.1.1", "192.168.0.0/16"],
  ["https://[64:ff9b:1::a9fe:a9fe]/", "169.254.169.254", "169.254.0.0/16"],
  ["https://[2002:7f00:1::]/", "127.0.0.1", "127.0.0.0/8"],
  ["https://[2002:a00:1::1]/", "10.0.0.1", "10.0.0.0/8"],
  // Teredo: the client IPv4 is stored XOR-ed (RFC 4380's own example: client 192.0.2.45)
  ["https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "192.0.2.45", "192.0.2.0/24"],
  ["https://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/", "10.0.0.1", "10.0.0.0/8"],
  // IPv6 ranges
  ["https://[::1]/", "::1", "::1/128"],
  ["https://[::]/", "::", "::/128"],
  ["https://[::7f00:1]/", "::7f00:1", "::/96"],
  ["https://[fd00::1]/", "fd00::1", "fc00::/7"],
  ["https://[fe80::1]/", "fe80::1", "fe80::/10"],
  ["https://[ff02::1]/", "ff02::1", "ff00::/8"],
  ["https://[2001:db8::1]/", "2001:db8::1", "2001:db8::/32"],
  ["https://[64:ff9b:1::808:808]/", "64:ff9b:1::808:808", "64:ff9b:1::/48"],
  // names: localhost never reaches DNS; the others through the injected resolver, every address judged
  ["https://localhost/", "127.0.0.1", "127.0.0.0/8"],
  ["https://LOCALHOST.:8443/", "127.0.0.1", "127.0.0.0/8"],
  ["https://api.localhost/", "127.0.0.1", "127.0.0.0/8"],
  ["https://internal.corp.test/hook", "10.0.0.5", "10.0.0.0/8"],
  ["https://INTERNAL.corp.test./hook", "10.0.0.5", "10.0.0.0/8"],
  ["https://metadata.corp.test/", "169.254.169.254", "169.254.0.0/16"],
  ["https://v6only-private.corp.test/", "fd00::1234", "fc00::/7"],
  ["https://mixed.corp.test/", "192.168.0.10", "192.168.0.0/16"],
  ["https://rebind.corp.test/", "127.0.0.1", "127.0.0.0/8"],
];

describe("checkDestinationUrl blocks non-public destinations", () => {
  test("the table has at least 25 URL forms", () => {
    expect(BLOCKED.length).toBeGreaterThanOrEqual(25);
  });

  for (const [url, ip, cidr] of BLOCKED) {
    test(`${url} → ssrf_blocked ${ip} in ${cidr}`, async () => {
      const err = await apiErrorOf(checkDestinationUrl(policy, url));
      expect(err.code).toBe("ssrf_blocked");
      expect(err.status).toBe(400);
      expect(err.detail).toEqual({ ip, cidr });
    });
  }
});

const PUBLIC: [url: string, addresses: string[]][] = [
  ["https://8.8.8.8/", ["8.8.8.8"]],
  ["https://1.1.1.1:8443/webhooks?x=1#f", ["1.1.1.1"]],
  ["https://134744072/", ["8.8.8.8"]],
  ["https://172.32.0.1/", ["172.32.0.1"]], // just past 172.16/12
  ["https://172.15.255.255/", ["172.15.255.255"]], // just before it
  ["https://100.128.0.1/", ["100.128.0.1"]], // just past CGNAT
  ["https://100.63.255.255/", ["100.63.255.255"]],
  ["https://198.20.0.1/", ["198.20.0.1"]], // just past benchmarking
  ["https://192.0.3.1/", ["192.0.3.1"]],
  ["https://223.255.255.255/", ["223.255.255.255"]],
  ["https://1.0.0.0/", ["1.0.0.0"]],
  ["https://[2606:4700:4700::1111]/", ["2606:4700:4700::1111"]],
  ["https://[::ffff:8.8.8.8]/", ["::ffff:808:808"]],
  ["https://[64:ff9b::808:808]/", ["64:ff9b::808:808"]],
  ["https://[2002:808:808::1]/", ["2002:808:808::1"]],
  ["https://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/", ["2001:0:4136:e378:8000:63bf:f7f7:f7f7"]], // Teredo client 8.8.8.8
  ["https://public.customer.test/hooks", ["8.8.8.8", "2606:4700:4700::1111"]],
  ["https://Public.Customer.Test./hooks", ["8.8.8.8", "2606:4700:4700::1111"]],
];

describe("checkDestinationUrl accepts public destinations", () => {
  for (const [url, addresses] of PUBLIC) {
    test(url, async () => {
      const res = await checkDestinationUrl(policy, url);
      expect(res.addresses).toEqual(addresses);
      expect(res.url.protocol).toBe("https:");
    });
  }
});

describe("SSRF_ALLOW_CIDRS exempts exactly its ranges", () => {
  const allowing = createSsrfPolicy({
    allowCidrs: ["127.0.0.0/8", "10.1.0.0/16", "fd12::/16", "192.168.0.10"],
    resolver,
  });

  const cases: [url: string, blocked: null | [ip: string, cidr: string]][] = [
    ["https://127.0.0.1:9443/", null],
    ["https://127.255.255.255/", null],
    ["https://localhost:9443/", null],
    ["https://[::ffff:127.0.0.1]/", null], // judged by its IPv4, so exempted by it too
    ["https://10.1.0.0/", null],
    ["https://10.1.255.255/", null],
    ["https://10.0.255.255/", ["10.0.255.255", "10.0.0.0/8"]],
    ["https://10.2.0.0/", ["10.2.0.0", "10.0.0.0/8"]],
    ["https://[fd12::1]/", null],
    ["https://[fd13::1]/", ["fd13::1", "fc00::/7"]],
    ["https://192.168.0.10/", null],
    ["https://192.168.0.11/", ["192.168.0.11", "192.168.0.0/16"]],
    ["https://mixed.corp.test/", null], // 8.8.8.8 + the one allowed 192.168.0.10
    ["https://internal.corp.test/", ["10.0.0.5", "10.0.0.0/8"]],
    ["https://[::1]/", ["::1", "::1/128"]], // 127/8 does not open IPv6 loopback
    ["https://128.0.0.1/", null],
  ];
  for (const [url, blocked] of cases) {
    test(`${url} → ${blocked ? `blocked in ${blocked[1]}` : "allowed"}`, async () => {
      if (blocked === null) {
        await checkDestinationUrl(allowing, url);
      } else {
        const err = await apiErrorOf(checkDestinationUrl(allowing, url));
        expect(err.code).toBe("ssrf_blocked");
        expect(err.detail).toEqual({ ip: blocked[0], cidr: blocked[1] });
      }
    });
  }

  test("the default policy still blocks what the allow list opened", async () => {
    expect((await apiErrorOf(checkDestinationUrl(policy, "https://10.1.2.3/"))).code).toBe("ssrf_blocked");
  });

  test("a malformed allow entry is refused at start", () => {
    expect(() => createSsrfPolicy({ allowCidrs: ["10.0.0.0/33"] })).toThrow();
    expect(() => createSsrfPolicy({ allowCidrs: ["not-a-cidr"] })).toThrow();
  });
});

describe("checkDestinationUrl rejects malformed URLs with invalid_request", () => {
  const cases: [url: string, reason: string][] = [
    ["http://8.8.8.8/", "must use https"],
    ["HTTP://public.customer.test/", "must use https"],
    ["ftp://public.customer.test/", "must use https"],
    ["wss://public.customer.test/", "must use https"],
    ["https://user:pass@public.customer.test/", "must not contain user-info"],
    ["https://user@public.customer.test/", "must not contain user-info"],
    ["https://:pass@public.customer.test/", "must not contain user-info"],
    ["https://@public.customer.test/", "must not contain user-info"],
    ["https:\\\\user@public.customer.test\\hook", "must not contain a backslash"],
    ["https:\\\\public.customer.test\\path", "must not contain a backslash"],
    [" https://public.customer.test/", "must not start or end with white space"],
    ["https://public.customer.test/ ", "must not start or end with white space"],
    ["https://public.customer.test/a\n", "must not start or end with white space"],
    ["https://public.cus\ttomer.test/", "must not contain control characters (tab, newline, NUL)"],
    ["https://public.customer.test/a\nb", "must not contain control characters (tab, newline, NUL)"],
    ["https://public.customer.test/\u0000", "must not contain control characters (tab, newline, NUL)"],
    ["https://public.customer.test/a\u007f", "must not contain control characters (tab, newline, NUL)"],
    ["https://public.customer.test/\ud800", "must be valid Unicode (it contains a lone surrogate)"],
    ["https://public.customer.test/\udc00x", "must be valid Unicode (it contains a lone surrogate)"],
    [`https://public.customer.test/${"ü".repeat(1000)}`, "is longer than 2048 characters once normalized"],
    ["not a url", "is not a valid URL"],
    ["https://", "is not a valid URL"],
    ["https://256.1.1.1/", "is not a valid URL"],
    ["", "is not a valid URL"],
    [`https://public.customer.test/${"a".repeat(2049 - "https://public.customer.test/".length)}`, "is longer than 2048 characters"],
  ];
  for (const [url, reason] of cases) {
    test(`${url.slice(0, 60)} → ${reason}`, async () => {
      const err = await apiErrorOf(checkDestinationUrl(policy, url));
      expect(err.code).toBe("invalid_request");
      expect(err.detail).toEqual({ param: "/destination/url", reason });
    });
  }

  test("the stored form is the parser's: host case, IDNA, percent-encoding, default port, dot segments", async () => {
    const cases: [string, string][] = [
      ["https://PUBLIC.customer.test:443/a/../b?x#y", "https://public.customer.test/b?x#y"],
      ["https://public.customer.test", "https://public.customer.test/"],
      ["https://public.customer.test/ü", "https://public.customer.test/%C3%BC"],
      ["https://public.customer.test/🔥", "https://public.customer.test/%F0%9F%94%A5"],
      ["https://ｐｕｂｌｉｃ.customer.test/x", "https://public.customer.test/x"],
    ];
    for (const [input, stored] of cases) {
      expect((await checkDestinationUrl(policy, input)).url.href).toBe(stored);
      // Idempotent: the stored form is accepted and stored unchanged.
      expect((await checkDestinationUrl(policy, stored)).url.href).toBe(stored);
    }
  });

  test("a user-info-looking '@' in the path or query is fine", async () => {
    await checkDestinationUrl(policy, "https://public.customer.test/a@b?c=d@e");
  });

  test("exactly 2048 characters is accepted", async () => {
    const base = "https://public.customer.test/";
    const url = base + "a".repeat(2048 - base.length);
    expect(url.length).toBe(2048);
    await checkDestinationUrl(policy, url);
  });
});

describe("resolution failures", () => {
  test("a name that does not exist → invalid_request 'does not resolve'", async () => {
    const err = await apiErrorOf(checkDestinationUrl(policy, "https://nowhere.customer.test/hook"));
    expect(err.code).toBe("invalid_request");
    expect(err.detail).toEqual({ param: "/destination/url", reason: "does not resolve" });
  });

  test("a name with no addresses → invalid_request 'does not resolve'", async () => {
    const empty = createSsrfPolicy({ allowCidrs: [], resolver: staticResolver({ "empty.customer.test": [] }) });
    const err = await apiErrorOf(checkDestinationUrl(empty, "https://empty.customer.test/"));
    expect(err.detail).toEqual({ param: "/destination/url", reason: "does not resolve" });
  });

  test("a failing resolver → service_unavailable", async () => {
    const err = await apiErrorOf(checkDestinationUrl(policy, "https://broken.customer.test/"));
    expect(err.code).toBe("service_unavailable");
    expect(err.status).toBe(503);
  });

  test("a resolver answering garbage is a failure, never permission", async () => {
    const garbage: Resolver = { lookup: async () => ["not-an-ip"] };
    const err = await apiErrorOf(checkDestinationUrl(createSsrfPolicy({ allowCidrs: [], resolver: garbage }), "https://x.customer.test/"));
    expect(err.code).toBe("service_unavailable");
  });

  test("the system resolver times out against a DNS server that never answers → service_unavailable", async () => {
    const silent = createSocket("udp4");
    await new Promise<void>((resolve) => silent.bind(0, "127.0.0.1", resolve));
    try {
      const port = silent.address().port;
      const system = createSystemResolver({ timeoutMs: 300, servers: [`127.0.0.1:${port}`] });
      const started = performance.now();
      const err = await apiErrorOf(
        checkDestinationUrl(createSsrfPolicy({ allowCidrs: [], resolver: system }), "https://hooks.customer.test/"),
      );
      expect(err.code).toBe("service_unavailable");
      // bounded: the lookup gives up on its own timeout rather than hanging
      expect(performance.now() - started).toBeLessThan(10_000);
    } finally {
      silent.close();
    }
  });

  test("the system resolver asks both families on every lookup: an empty AAAA answer is not kept past its TTL", async () => {
    const dns = await startDnsServer({ ttl: 1 });
    try {
      dns.records.set("gains-v6.customer.test", { a: ["8.8.8.8"] });
      const system = createSystemResolver({ timeoutMs: 2_000, servers: [dns.address] });
      const p = createSsrfPolicy({ allowCidrs: [], resolver: system });
      await checkDestinationUrl(p, "https://gains-v6.customer.test/");
      // The name gains a loopback AAAA; the empty answer's TTL (1 s) has passed by the next check.
      dns.records.set("gains-v6.customer.test", { a: ["8.8.8.8"], aaaa: ["::1"] });
      await Bun.sleep(1_100);
      const err = await apiErrorOf(checkDestinationUrl(p, "https://gains-v6.customer.test/"));
      expect(err.code).toBe("ssrf_blocked");
      expect(err.detail).toEqual({ ip: "::1", cidr: "::1/128" });
      expect(dns.queries.filter((q) => q === "AAAA gains-v6.customer.test").length).toBe(2);
    } finally {
      dns.close();
    }
  });

  test("literal addresses and localhost never reach the resolver", async () => {
    const asked: string[] = [];
    const spy: Resolver = {
      lookup: async (h) => {
        asked.push(h);
        return ["8.8.8.8"];
      },
    };
    const p = createSsrfPolicy({ allowCidrs: [], resolver: spy });
    await checkDestinationUrl(p, "https://8.8.8.8/");
    await checkDestinationUrl(p, "https://[2606:4700:4700::1111]/");
    await apiErrorOf(checkDestinationUrl(p, "https://localhost/"));
    await apiErrorOf(checkDestinationUrl(p, "https://a.b.localhost/"));
    expect(asked).toEqual([]);
    await checkDestinationUrl(p, "https://hooks.customer.test/");
    expect(asked).toEqual(["hooks.customer.test"]);
  });
});

describe("judgeAddress", () => {
  test("answers for single addresses, the most specific range first", () => {
    expect(judgeAddress(policy, "8.8.8.8")).toEqual({ blocked: false });
    expect(judgeAddress(policy, "255.255.255.255")).toEqual({ blocked: true, ip: "255.255.255.255", cidr: "255.255.255.255/32" });
    expect(judgeAddress(policy, "::ffff:10.0.0.1")).toEqual({ blocked: true, ip: "10.0.0.1", cidr: "10.0.0.0/8" });
    expect(judgeAddress(policy, "[::1]")).toEqual({ blocked: true, ip: "::1", cidr: "::1/128" });
    expect(judgeAddress(policy, "2001:4860:4860::8888")).toEqual({ blocked: false });
    expect(judgeAddress(policy, "2001:2::1")).toEqual({ blocked: true, ip: "2001:2::1", cidr: "2001::/23" });
  });

  test("throws on something that is not an address", () => {
    expect(() => judgeAddress(policy, "example")).toThrow();
  });
});

describe("resolvePinned (the deliverer's check on every attempt)", () => {
  test("returns a checked address to connect to, IPv4 first", async () => {
    expect(await resolvePinned(policy, "public.customer.test")).toEqual({
      addresses: ["8.8.8.8", "2606:4700:4700::1111"],
      address: "8.8.8.8",
      family: 4,
    });
    expect(await resolvePinned(policy, "v6.customer.test")).toMatchObject({ address: "2606:4700:4700::1111", family: 6 });
    expect(await resolvePinned(policy, "mapped.customer.test")).toMatchObject({ address: "8.8.4.4", family: 4 });
    expect(await resolvePinned(policy, "[2606:4700:4700::1111]")).toMatchObject({ address: "2606:4700:4700::1111", family: 6 });
    expect(await resolvePinned(policy, "8.8.8.8")).toMatchObject({ address: "8.8.8.8" });
  });

  test("a non-canonical IPv4 literal is the address it denotes, not a name", async () => {
    const err = await resolvePinned(policy, "127.1").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DestinationError);
    expect(err).toMatchObject({ kind: "blocked", ip: "127.0.0.1", cidr: "127.0.0.0/8" });
  });

  test("a blocked address is a typed error with a short reason", async () => {
    const err = await resolvePinned(policy, "rebind.corp.test").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DestinationError);
    const de = err as DestinationError;
    expect(de.kind).toBe("blocked");
    expect(de.ip).toBe("127.0.0.1");
    expect(de.cidr).toBe("127.0.0.0/8");
    expect(de.message).toContain("127.0.0.0/8");
  });

  test("a name that no longer resolves and a failing resolver are typed errors too", async () => {
    expect(await resolvePinned(policy, "gone.customer.test").catch((e: unknown) => e)).toMatchObject({ kind: "does_not_resolve" });
    expect(await resolvePinned(policy, "broken.customer.test").catch((e: unknown) => e)).toMatchObject({ kind: "resolver_failed" });
  });
});
