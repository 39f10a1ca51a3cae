// Waiting, bounded: deadlines on calls to infrastructure, sleeps that a stop or a wake-up cuts short. Every service
// uses these instead of its own setTimeout races, so an abandoned call never leaves a timer or an unhandled rejection.

/**
 * `work`, or `onTimeout()` thrown after `ms`. The work is not cancelled (nothing can cancel a sent query): its late
 * failure is swallowed, since nobody waits for it any more.
 */
export async function withTimeout<T>(work: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  work.catch(() => {});
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** `work`'s value, or `fallback` after `ms` (a check that does not answer in time counts as failed, say). */
export async function orAfter<T, F>(work: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<F>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
  });
  work.catch(() => {});
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * A broadcast wait: notify() ends the waits running now and nothing later (a change nobody waited for is not kept;
 * a waiter looks at the state itself before waiting).
 */
export class Notifier {
  private readonly waiters = new Set<() => void>();

  get waiting(): number {
    return this.waiters.size;
  }

  /**
   * Resolves after `ms`, at notify(), or when `signal` aborts (at once if it has). `unref`: the wait alone does not
   * keep the process alive (a background job's).
   */
  wait(ms: number, signal?: AbortSignal, unref = false): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.waiters.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const t = setTimeout(done, ms);
      if (unref) t.unref?.();
      this.waiters.add(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  /** Ends every wait running now. */
  notify(): void {
    for (const done of [...this.waiters]) done();
  }
}

/**
 * A pause a loop takes between passes that `wake()` ends early. A wake-up while the loop is busy is kept, so the
 * next pause returns at once and no request for work is lost between two passes.
 */
export class Pause {
  private woken = false;
  private readonly notifier = new Notifier();

  /** Resolves after `ms`, at a wake-up, or when `signal` aborts; `unref` as Notifier.wait. */
  wait(ms: number, signal?: AbortSignal, unref = false): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return this.notifier.wait(ms, signal, unref);
  }

  /** Ends every pause now; with nobody paused, the next pause returns at once. */
  wake(): void {
    if (this.notifier.waiting === 0) {
      this.woken = true;
      return;
    }
    this.woken = false;
    this.notifier.notify();
  }
}

/**
 * A memo of bounded size for pure lookups (parsed input, a signer per secret): reaching `limit` entries forgets them
 * all, which costs one miss per hot entry and no bookkeeping per hit. Caches whose eviction must follow recency keep
 * their own (gateway/auth.ts, deliverer/targets.ts).
 */
export class MemoMap<K, V> extends Map<K, V> {
  constructor(private readonly limit: number) {
    super();
  }

  override set(key: K, value: V): this {
    if (this.size >= this.limit && !this.has(key)) this.clear();
    return super.set(key, value);
  }
}

/**
 * The wait before retry `attempt` (1, 2, …): `baseMs` doubled per attempt up to `maxMs`. `jitter` spreads it over
 * its upper half, so callers that failed together do not retry together.
 */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number, jitter = false): number {
  const delay = Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30));
  return jitter ? delay / 2 + Math.random() * (delay / 2) : delay;
}
