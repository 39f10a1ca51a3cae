// The SSRF policy: which destinations a webhook may be sent to. Used by the registry when a URL is submitted and by
// the deliverer on every attempt (resolve once, judge every address, connect to the judged one).
import { Resolver as DnsResolver } from "node:dns/promises";
import ipaddr from "ipaddr.js";
import { ApiError, MAX_URL_LENGTH } from "./contract/index.ts";
import { MemoMap, withTimeout } from "./timing.ts";

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Cidr = [Address, number];

/** Every range that is not globally routable. Kept in one table so a reviewer reads the whole policy in one place. */
const BLOCKED_IPV4: readonly string[] = [
  "0.0.0.0/8", // "this network" (RFC 791); 0.0.0.0 reaches the local host on most stacks
  "10.0.0.0/8", // private (RFC 1918)
  "100.64.0.0/10", // carrier-grade NAT (RFC 6598)
  "127.0.0.0/8", // loopback
  "169.254.0.0/16", // link-local, cloud metadata endpoints
  "172.16.0.0/12", // private (RFC 1918)
  "192.0.0.0/24", // IETF protocol assignments (RFC 6890)
  "192.0.2.0/24", // documentation TEST-NET-1 (RFC 5737)
  "192.88.99.0/24", // deprecated 6to4 relay anycast (RFC 7526)
  "192.168.0.0/16", // private (RFC 1918)
  "198.18.0.0/15", // benchmarking (RFC 2544)
  "198.51.100.0/24", // documentation TEST-NET-2
  "203.0.113.0/24", // documentation TEST-NET-3
  "224.0.0.0/4", // multicast
  "240.0.0.0/4", // reserved for future use
  "255.255.255.255/32", // limited broadcast
];

// IPv6 is listed as the IANA address-space registry has it: everything outside 2000::/3 is unassigned or
// special-purpose, plus the special-purpose blocks inside 2000::/3.
const BLOCKED_IPV6: readonly string[] = [
  "::/128", // unspecified
  "::1/128", // loopback
  "::/96", // deprecated IPv4-compatible addresses (RFC 4291): unroutable whatever the IPv4, so not judged by it
  "::/8", // reserved by IETF (holds the IPv4-mapped and NAT64 prefixes, judged by their IPv4 first)
  "100::/64", // discard-only (RFC 6666)
  "100::/8",
  "200::/7",
  "400::/6",
  "800::/5",
  "1000::/4",
  "2001::/23", // IETF protocol assignments (Teredo inside it is judged by its client IPv4 first)
  "2001:db8::/32", // documentation (RFC 3849)
  "3fff::/20", // documentation (RFC 9637)
  "5f00::/16", // SRv6 SIDs (RFC 9602)
  "4000::/3",
  "6000::/3",
  "8000::/3",
  "a000::/3",
  "c000::/3",
  "e000::/4",
  "f000::/5",
  "f800::/6",
  "fc00::/7", // unique local (RFC 4193)
  "fe00::/9",
  "fe80::/10", // link-local
  "fec0::/10", // deprecated site-local
  "ff00::/8", // multicast
];

/**
 * IPv6 prefixes that carry an IPv4 address. Such an address is judged by the IPv4 inside. `routable: false` marks
 * prefixes that are never globally routable themselves, so they stay blocked even when the IPv4 is public.
 */
const IPV4_EMBEDDINGS: readonly { cidr: string; routable: boolean; ipv4: (bytes: number[]) => number[] }[] = [
  { cidr: "::ffff:0:0/96", routable: true, ipv4: (b) => b.slice(12, 16) }, // IPv4-mapped
  { cidr: "64:ff9b::/96", routable: true, ipv4: (b) => b.slice(12, 16) }, // NAT64 well-known prefix (RFC 6052)
  { cidr: "64:ff9b:1::/48", routable: false, ipv4: (b) => b.slice(12, 16) }, // NAT64 local use (RFC 8215), /96 form
  { cidr: "2002::/16", routable: true, ipv4: (b) => b.slice(2, 6) }, // 6to4 (RFC 3056)
  { cidr: "2001::/32", routable: true, ipv4: (b) => b.slice(12, 16).map((x) => x ^ 0xff) }, // Teredo client, XOR-ed
];

interface Range {
  text: string;
  cidr: Cidr;
}

function parseRanges(list: readonly string[]): Range[] {
  return list.map((text) => ({ text, cidr: ipaddr.parseCIDR(text) }));
}

const BLOCKED_V4 = parseRanges(BLOCKED_IPV4);
const BLOCKED_V6 = parseRanges(BLOCKED_IPV6);
const EMBEDDINGS = IPV4_EMBEDDINGS.map((e) => ({ ...e, range: ipaddr.parseCIDR(e.cidr) }));

function inRange(addr: Address, cidr: Cidr): boolean {
  return addr.kind() === cidr[0].kind() && addr.match(cidr);
}

/** The most specific blocked range holding addr (longest prefix), or null. */
function mostSpecific(addr: Address, table: Range[]): Range | null {
  let best: Range | null = null;
  for (const r of table) {
    if (inRange(addr, r.cidr) && (best === null || r.cidr[1] > best.cidr[1])) best = r;
  }
  return best;
}

// ---------------------------------------------------------------------------------------------------------------
// Resolvers

/** Every A and AAAA address of a name; [] when the name does not exist; throws when the resolver fails. */
export interface Resolver {
  lookup(hostname: string): Promise<string[]>;
}

export class ResolverError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = "ResolverError";
  }
}

// The name does not exist or has no record of that type: an answer, not a failure.
const ABSENT_CODES = new Set(["ENOTFOUND", "ENODATA"]);

/** A resolver over the system's DNS servers (or given ones), answering within timeoutMs or throwing. */
export function createSystemResolver(options: { timeoutMs?: number; servers?: string[] } = {}): Resolver {
  const timeoutMs = options.timeoutMs ?? 3000;
  // A fresh channel per lookup: a long-lived one keeps a query cache that held an empty AAAA answer past its TTL,
  // so a name that gained an address was not judged by it. Both families are asked on every lookup; caching is
  // left to the system's resolver, which honours TTLs.
  const channel = () => {
    const dns = new DnsResolver({ timeout: timeoutMs, tries: 1 });
    if (options.servers) dns.setServers(options.servers);
    return dns;
  };

  const query = async (dns: DnsResolver, family: "resolve4" | "resolve6", hostname: string): Promise<string[]> => {
    try {
      return await dns[family](hostname);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== undefined && ABSENT_CODES.has(code)) return [];
      throw new ResolverError(`DNS ${family === "resolve4" ? "A" : "AAAA"} lookup of ${hostname} failed: ${code ?? err}`, code);
    }
  };

  return {
    async lookup(hostname) {
      const dns = channel();
      try {
        const [v4, v6] = await withTimeout(
          Promise.all([query(dns, "resolve4", hostname), query(dns, "resolve6", hostname)]),
          timeoutMs,
          () => new ResolverError(`DNS lookup of ${hostname} timed out`, "ETIMEOUT"),
        );
        return [...v4, ...v6];
      } finally {
        dns.cancel();
      }
    },
  };
}

const systemResolver: Resolver = createSystemResolver();

/**
 * A resolver answering from a fixed table (for tests and fixed deployments): a name maps to its addresses, a missing
 * name does not exist, and a name mapped to an Error fails with it.
 */
export function staticResolver(map: Record<string, readonly string[] | Error>): Resolver {
  const table = new Map(Object.entries(map).map(([k, v]) => [normalizeHostname(k), v]));
  return {
    async lookup(hostname) {
      const entry = table.get(normalizeHostname(hostname));
      if (entry === undefined) return [];
      if (entry instanceof Error) throw entry;
      return [...entry];
    },
  };
}

function normalizeHostname(hostname: string): string {
  return hostname.toLowerCase().replace(/\.$/, "");
}

// ---------------------------------------------------------------------------------------------------------------
// The policy

export interface SsrfPolicy {
  readonly allowCidrs: readonly string[];
  readonly resolver: Resolver;
  readonly allowed: readonly Cidr[];
}

/** Throws on a malformed allow entry: a typo in SSRF_ALLOW_CIDRS must stop the service, not open or close it silently. */
export function createSsrfPolicy(options: { allowCidrs: readonly string[]; resolver?: Resolver }): SsrfPolicy {
  const allowed = options.allowCidrs.map((text): Cidr => {
    const s = text.trim();
    if (s.includes("/")) return ipaddr.parseCIDR(s);
    const addr = ipaddr.parse(s);
    return [addr, addr.kind() === "ipv4" ? 32 : 128];
  });
  return { allowCidrs: [...options.allowCidrs], resolver: options.resolver ?? systemResolver, allowed };
}

export type Judgement = { blocked: false } | { blocked: true; ip: string; cidr: string };

function isAllowed(policy: SsrfPolicy, addr: Address): boolean {
  return policy.allowed.some((c) => inRange(addr, c));
}

function judgeV4(policy: SsrfPolicy, v4: ipaddr.IPv4): Judgement {
  if (isAllowed(policy, v4)) return { blocked: false };
  const hit = mostSpecific(v4, BLOCKED_V4);
  return hit ? { blocked: true, ip: v4.toString(), cidr: hit.text } : { blocked: false };
}

/** Judges one address (IPv4 or IPv6, brackets optional). Throws on a string that is not an address. */
export function judgeAddress(policy: SsrfPolicy, ip: string): Judgement {
  // A verdict depends only on the policy and the address: the deliverer judges the same few addresses on every
  // attempt, so they are remembered (bounded) instead of parsed and matched against every range again.
  let cache = verdicts.get(policy);
  if (!cache) verdicts.set(policy, (cache = new MemoMap(VERDICT_CACHE_SIZE)));
  const known = cache.get(ip);
  if (known) return known;
  const verdict = judgeAddressUncached(policy, ip);
  cache.set(ip, verdict);
  return verdict;
}

const verdicts = new WeakMap<SsrfPolicy, Map<string, Judgement>>();
const VERDICT_CACHE_SIZE = 10_000;

function judgeAddressUncached(policy: SsrfPolicy, ip: string): Judgement {
  const addr = ipaddr.parse(stripBrackets(ip));
  if (addr.kind() === "ipv4") return judgeV4(policy, addr as ipaddr.IPv4);
  const v6 = addr as ipaddr.IPv6;
  if (isAllowed(policy, v6)) return { blocked: false };

  const embedding = EMBEDDINGS.find((e) => inRange(v6, e.range));
  if (embedding) {
    const v4 = new ipaddr.IPv4(embedding.ipv4(v6.toByteArray()));
    const inner = judgeV4(policy, v4);
    if (inner.blocked || embedding.routable) return inner;
    if (isAllowed(policy, v4)) return { blocked: false };
    return { blocked: true, ip: v6.toString(), cidr: embedding.cidr };
  }
  const hit = mostSpecific(v6, BLOCKED_V6);
  return hit ? { blocked: true, ip: v6.toString(), cidr: hit.text } : { blocked: false };
}

function stripBrackets(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

// ---------------------------------------------------------------------------------------------------------------
// Destinations

const URL_PARAM = "/destination/url";

/** Said with every ssrf_blocked answer: the one way to reach a non-public destination on purpose. */
export const SSRF_ALLOW_HINT =
  "Private deployments and tests can exempt ranges with the SSRF_ALLOW_CIDRS setting (e.g. SSRF_ALLOW_CIDRS=10.0.0.0/8).";

/** Why a destination cannot be used; the deliverer records `message` as the failed attempt's reason. */
export class DestinationError extends Error {
  constructor(
    readonly kind: "blocked" | "does_not_resolve" | "resolver_failed",
    message: string,
    readonly ip?: string,
    readonly cidr?: string,
  ) {
    super(message);
    this.name = "DestinationError";
  }

  toApiError(): ApiError {
    switch (this.kind) {
      case "blocked":
        return new ApiError("ssrf_blocked", `${this.message} ${SSRF_ALLOW_HINT}`, { ip: this.ip, cidr: this.cidr });
      case "does_not_resolve":
        return new ApiError("invalid_request", this.message, { param: URL_PARAM, reason: "does not resolve" });
      case "resolver_failed":
        return new ApiError(
          "service_unavailable",
          "The destination host could not be resolved right now; nothing was changed. Try again shortly.",
        );
    }
  }
}

export interface ResolvedHost {
  /** Every address the host has (one for a literal), each of them judged. */
  addresses: string[];
  /** The address to connect to: an IPv4 when there is one; an IPv4-mapped IPv6 is given as its IPv4. */
  address: string;
  family: 4 | 6;
}

function isLocalhostName(name: string): boolean {
  return name === "localhost" || name.endsWith(".localhost");
}

/**
 * Resolves a URL host (as `URL.hostname` gives it: a name, a dotted quad or a bracketed IPv6), judges every address
 * and returns the one to connect to. Throws DestinationError.
 */
export async function resolvePinned(policy: SsrfPolicy, hostname: string): Promise<ResolvedHost> {
  const host = stripBrackets(hostname);
  let addresses: string[];
  const literal = literalAddress(host);
  if (literal !== null) {
    // Any literal form (also "127.1" or "0x7f.1", which inet_aton would accept) is the address it denotes, never a name.
    addresses = [literal];
  } else {
    const name = normalizeHostname(host);
    if (isLocalhostName(name)) {
      // RFC 6761: localhost names are loopback and never go to DNS. We connect to the pinned address, so one is enough.
      addresses = ["127.0.0.1"];
    } else {
      try {
        addresses = await policy.resolver.lookup(name);
      } catch (err) {
        throw new DestinationError("resolver_failed", `DNS lookup of ${name} failed: ${(err as Error).message}`);
      }
      if (addresses.length === 0) throw new DestinationError("does_not_resolve", `The host ${name} does not resolve.`);
    }
  }

  for (const ip of addresses) {
    let verdict: Judgement;
    try {
      verdict = judgeAddress(policy, ip);
    } catch {
      // The resolver answered something that is not an address: treat it as a failure, never as permission.
      throw new DestinationError("resolver_failed", `DNS lookup of ${host} returned an invalid address`);
    }
    if (verdict.blocked) {
      throw new DestinationError(
        "blocked",
        `The destination resolves to ${verdict.ip}, in the non-public range ${verdict.cidr}.`,
        verdict.ip,
        verdict.cidr,
      );
    }
  }

  return { addresses, ...connectTarget(addresses) };
}

// The deliverer resolves on every attempt; parsing the same host names and addresses again each time is wasted work,
// so both steps below are remembered (bounded). Neither depends on anything but its input.
const MEMO_SIZE = 10_000;
const LITERALS = new MemoMap<string, string | null>(MEMO_SIZE);
const TARGETS = new MemoMap<string, { address: string; family: 4 | 6 }>(MEMO_SIZE);

function remember<V>(map: Map<string, V>, key: string, value: V): V {
  map.set(key, value);
  return value;
}

/** The address a host literal denotes, or null for a name. */
function literalAddress(host: string): string | null {
  const known = LITERALS.get(host);
  if (known !== undefined) return known;
  return remember(LITERALS, host, ipaddr.isValid(host) ? ipaddr.parse(host).toString() : null);
}

/** An IPv4 when there is one (an IPv4-mapped IPv6 given as its IPv4), else the first address. */
function connectTarget(addresses: string[]): { address: string; family: 4 | 6 } {
  const key = addresses.join(",");
  const known = TARGETS.get(key);
  if (known) return known;
  const parsed = addresses.map((a) => ipaddr.parse(a));
  const v4 = parsed.find((a) => a.kind() === "ipv4");
  const mapped = parsed.find((a): a is ipaddr.IPv6 => a.kind() === "ipv6" && (a as ipaddr.IPv6).isIPv4MappedAddress());
  const target: { address: string; family: 4 | 6 } = v4
    ? { address: v4.toString(), family: 4 }
    : mapped
      ? { address: mapped.toIPv4Address().toString(), family: 4 }
      : { address: parsed[0]!.toString(), family: 6 };
  return remember(TARGETS, key, target);
}

function invalidUrl(reason: string): ApiError {
  return new ApiError("invalid_request", `destination.url ${reason}.`, { param: URL_PARAM, reason });
}

// WHATWG drops an empty user-info ("https://@host/"), so it is looked for in the raw authority, found the way the
// URL parser finds it for special schemes: after the scheme and its slashes, up to the first / \ ? or #.
function rawAuthorityHasUserInfo(raw: string): boolean {
  const afterScheme = raw.slice(raw.indexOf(":") + 1).replace(/^[/\\]*/, "");
  const end = afterScheme.search(/[/\\?#]/);
  return (end === -1 ? afterScheme : afterScheme.slice(0, end)).includes("@");
}

// Characters the WHATWG parser would silently drop or rewrite, so that what is stored would not be what was sent:
// C0 controls (tab, CR, LF and NUL among them), space and DEL at the ends, DEL anywhere, and the backslash that
// special schemes read as "/". A lone surrogate cannot be encoded at all (the parser would make it U+FFFD).
const CONTROL = /[\u0000-\u001f\u007f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Parses a destination URL once and returns its one stored form, `new URL(raw).href` (docs/CONTRACT.md "Limits" and the
 * README's URL rule). Accepted normalizations are the parser's lossless ones: scheme and host case, IDNA (a fullwidth
 * or Unicode host becomes its ASCII form), percent-encoding of non-ASCII path, query and fragment characters, the
 * default port, dot segments and an empty path becoming "/". Anything the parser would drop or guess at is refused.
 * Throws invalid_request with detail.param /destination/url.
 */
function normalizeDestinationUrl(rawUrl: string): URL {
  if (rawUrl.length > MAX_URL_LENGTH) throw invalidUrl(`is longer than ${MAX_URL_LENGTH} characters`);
  if (rawUrl.trim() !== rawUrl) throw invalidUrl("must not start or end with white space");
  if (CONTROL.test(rawUrl)) throw invalidUrl("must not contain control characters (tab, newline, NUL)");
  if (rawUrl.includes("\\")) throw invalidUrl("must not contain a backslash");
  if (LONE_SURROGATE.test(rawUrl)) throw invalidUrl("must be valid Unicode (it contains a lone surrogate)");
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw invalidUrl("is not a valid URL");
  }
  if (url.protocol !== "https:") throw invalidUrl("must use https");
  if (url.username !== "" || url.password !== "" || rawAuthorityHasUserInfo(rawUrl)) {
    throw invalidUrl("must not contain user-info");
  }
  if (url.hostname === "") throw invalidUrl("has no host");
  // Percent-encoding can make the stored form longer than what was sent; the limit holds for what is stored.
  if (url.href.length > MAX_URL_LENGTH) throw invalidUrl(`is longer than ${MAX_URL_LENGTH} characters once normalized`);
  // The stored form must parse back to itself, or a later reader (the deliverer) would send somewhere else.
  let again: string;
  try {
    again = new URL(url.href).href;
  } catch {
    throw invalidUrl("is not a valid URL");
  }
  if (again !== url.href) throw invalidUrl("does not have a stable normalized form");
  return url;
}

/**
 * The request-time check of a destination URL. Throws ApiError: invalid_request (with detail.param and reason),
 * ssrf_blocked ({ip, cidr}) or service_unavailable (resolver failure or timeout). `url.href` is the form to store.
 */
export async function checkDestinationUrl(
  policy: SsrfPolicy,
  rawUrl: string,
): Promise<{ url: URL; addresses: string[] }> {
  const url = normalizeDestinationUrl(rawUrl);
  try {
    const { addresses } = await resolvePinned(policy, url.hostname);
    return { url, addresses };
  } catch (err) {
    if (err instanceof DestinationError) throw err.toApiError();
    throw err;
  }
}
