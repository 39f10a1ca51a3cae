// Pacing of refused callers: a request refused by the unknown-key limit (client-limit.ts) is answered only after its
// Retry-After delay has passed, so a client that sends again as soon as it is answered (whatever its concurrency,
// within the hold's bounds) is held to one request per connection per delay instead of costing the gateway a refusal
// as fast as it can send. What is held is bounded per client and in all; past either bound a refusal is answered at
// once, on its open connection (closing it cost the gateway more in accepts than the answers did).
// docs/adr/0008-refusals-are-paced.md has the measurements.

/**
 * The longest hold, whatever Retry-After says (a limit set to a few lookups a minute): well within the server's idle
 * timeout (Elysia's 30 s), so a held connection is answered, not dropped.
 */
export const MAX_HOLD_MS = 10_000;

export interface RefusalPacer {
  /**
   * Waits `ms` (at most maxHoldMs) before a refusal to `client` is answered; resolves false at once when the client
   * or the gateway already holds as many refusals as allowed.
   */
  hold(client: string, ms: number): Promise<boolean>;
  /** Refusals held now (metrics, tests). */
  held(): number;
}

export interface RefusalPacerOptions {
  /** Refusals held at once for one client (its address, see clientKey). */
  perClient: number;
  /** Refusals held at once in all. */
  total: number;
  /** The longest hold (default MAX_HOLD_MS). */
  maxHoldMs?: number;
}

export function createRefusalPacer(opts: RefusalPacerOptions): RefusalPacer {
  const perClient = new Map<string, number>();
  let total = 0;
  const maxHoldMs = opts.maxHoldMs ?? MAX_HOLD_MS;
  const NOW = Promise.resolve(false);
  return {
    hold(client, ms) {
      const mine = perClient.get(client) ?? 0;
      if (ms <= 0 || mine >= opts.perClient || total >= opts.total) return NOW;
      perClient.set(client, mine + 1);
      total++;
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          total--;
          const left = (perClient.get(client) ?? 1) - 1;
          if (left > 0) perClient.set(client, left);
          else perClient.delete(client);
          resolve(true);
        }, Math.min(ms, maxHoldMs));
        // A held refusal never keeps a stopping process alive.
        timer.unref();
      });
    },
    held: () => total,
  };
}
