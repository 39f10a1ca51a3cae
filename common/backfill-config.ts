// The backfill limits (docs/CONTRACT.md "Backfills"), read from the environment like the rest of common/config.ts.
export interface BackfillConfig {
  /** BACKFILL_MAX_BLOCKS: the longest range one job may scan (default 864,000 blocks, 30 days of TRON). */
  maxBlocks: number;
  /** BACKFILL_CONCURRENCY_PER_KEY: jobs of one API key running at once; the others wait queued. */
  concurrencyPerKey: number;
  /** BACKFILL_NODE_CONCURRENCY: history requests in flight per chain (the live streams' are not counted). */
  nodeConcurrency: number;
}

function positive(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a whole number, at least 1, got "${raw}"`);
  return n;
}

export function loadBackfillConfig(env: Record<string, string | undefined>): BackfillConfig {
  return {
    maxBlocks: positive(env, "BACKFILL_MAX_BLOCKS", 864_000),
    concurrencyPerKey: positive(env, "BACKFILL_CONCURRENCY_PER_KEY", 2),
    nodeConcurrency: positive(env, "BACKFILL_NODE_CONCURRENCY", 2),
  };
}
