// The limit on registry lookups of keys the gateway does not know, per client address (GCRA, in memory). A caller
// with a key the gateway has seen valid never meets it; a flood of made-up, key-shaped tokens from one address gets
// 429 after a burst instead of a database lookup each. Per process, not in Redis: it is the guard in front of the
// lookup, so it must cost nothing and hold while Redis is down.

export interface ClientDecision {
  allowed: boolean;
  /** Whole seconds until a lookup would pass again (Retry-After); 0 when allowed. */
  retryAfterSeconds: number;
}

export interface ClientLimiter {
  take(address: string | undefined): ClientDecision;
}

export interface ClientLimitOptions {
  rps: number;
  burst: number;
  /** Addresses tracked at most; beyond, the least recently seen are forgotten (a forgotten one starts full). */
  maxClients?: number;
  /** Milliseconds (default performance.now). */
  now?: () => number;
}

/**
 * The bucket an address belongs to: an IPv6 client holds a whole /64 (so it cannot rotate through its own
 * addresses), an IPv4-mapped IPv6 address is its IPv4 address.
 */
export function clientKey(address: string | undefined): string {
  if (!address) return "unknown";
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!address.includes(":")) return address;
  const [head = "", tail = ""] = address.toLowerCase().split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = address.includes("::") ? [...left, ...Array(8 - left.length - right.length).fill("0"), ...right] : left;
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, "")).join(":")}::/64`;
}

export function createClientLimiter(opts: ClientLimitOptions): ClientLimiter {
  if (!(opts.rps > 0) || !(opts.burst >= 1)) {
    throw new Error(`UNKNOWN_KEY_RATE_LIMIT_RPS must be above 0 and UNKNOWN_KEY_RATE_LIMIT_BURST at least 1 (got ${opts.rps} and ${opts.burst})`);
  }
  // Whole microseconds: a fractional clock would let (t + interval) - tolerance land a rounding error above t.
  const interval = Math.max(1, Math.round(1_000_000 / opts.rps));
  const tolerance = interval * Math.floor(opts.burst);
  const maxClients = opts.maxClients ?? 100_000;
  const clock = opts.now ?? (() => performance.now());
  const now = () => Math.round(clock() * 1_000);
  // Theoretical arrival time per client; in order of last use (re-inserted on each take).
  const tats = new Map<string, number>();

  const makeRoom = (t: number) => {
    // A bucket whose arrival time has passed is full again: the same as no entry.
    for (const [k, tat] of tats) if (tat <= t) tats.delete(k);
    for (const k of tats.keys()) {
      if (tats.size < maxClients) break;
      tats.delete(k);
    }
  };

  return {
    take(address) {
      const key = clientKey(address);
      const t = now();
      const tat = Math.max(tats.get(key) ?? t, t);
      const next = tat + interval;
      const allowAt = next - tolerance;
      if (allowAt > t) return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((allowAt - t) / 1_000_000)) };
      tats.delete(key);
      if (tats.size >= maxClients) makeRoom(t);
      tats.set(key, next);
      return { allowed: true, retryAfterSeconds: 0 };
    },
  };
}
