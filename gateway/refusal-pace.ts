// Pacing of refused callers: a request refused by the unknown-key limit (client-limit.ts) is answered only after its
// Retry-After delay has passed, so a client that sends again as soon as it is answered (whatever its concurrency,
// within the hold's bounds) is held to one request per connection per delay instead of costing the gateway a refusal
// as fast as it can send. What is held is bounded per client and in all; past either bound a refusal is answered at
// once and closes its connection, so the caller pays a new connection for each further request.
// docs/adr/0008-refusals-are-paced.md has the measurements.

export interface RefusalPacer {
  /**
   * Waits `ms` before a refusal to `client` is answered; resolves false at once when the client or the gateway
   * already holds as many refusals as allowed (then answer with `Connection: close`).
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
}

export function createRefusalPacer(opts: RefusalPacerOptions): RefusalPacer {
  const perClient = new Map<string, number>();
  let total = 0;
  const NOW = Promise.resolve(false);
  return {
    hold(client, ms) {
      const mine = perClient.get(client) ?? 0;
      if (ms <= 0 || mine >= opts.perClient || total >= opts.total) return NOW;
      perClient.set(client, mine + 1);
      total++;
      return new Promise((resolve) =>
        setTimeout(() => {
          total--;
          const left = (perClient.get(client) ?? 1) - 1;
          if (left > 0) perClient.set(client, left);
          else perClient.delete(client);
          resolve(true);
        }, ms),
      );
    },
    held: () => total,
  };
}
