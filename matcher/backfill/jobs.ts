// The matcher's side of the registry's `backfills` table (registry/schema.ts): claim jobs under a lease (one
// replica runs each), renew the leases, and move a job's checkpoint and counts once its blocks' events were
// accepted. Every write is conditional on this replica still holding the lease on a running job, so a job the
// customer canceled (or whose subscription was disabled) stops at its next checkpoint.
import type { MatcherDb } from "../store.ts";

export interface BackfillJob {
  id: string;
  subscriptionId: string;
  keyId: string;
  fromBlock: number;
  toBlock: number;
  /** The next block to scan. */
  nextBlock: number;
  /** The chosen subset (null: every address of the subscription on the chain). */
  addresses: Set<string> | null;
  solidifiedHead: number;
}

interface JobRow {
  id: string;
  subscription_id: string;
  key_id: string;
  from_block: string | number;
  to_block: string | number;
  next_block: string | number;
  addresses: string[] | null;
  solidified_head: string | number;
}

function toJob(r: JobRow): BackfillJob {
  return {
    id: r.id,
    subscriptionId: r.subscription_id,
    keyId: r.key_id,
    fromBlock: Number(r.from_block),
    toBlock: Number(r.to_block),
    nextBlock: Number(r.next_block),
    addresses: r.addresses ? new Set(r.addresses) : null,
    solidifiedHead: Number(r.solidified_head),
  };
}

/**
 * Takes the chain's jobs this replica may run now: the ones it holds, then queued ones (or running ones whose lease
 * lapsed: their replica died), oldest first, while their key has fewer than `perKey` jobs under a live lease on any
 * chain. One transaction under an advisory lock, so two scanners never count the same free place twice. `takeOver`:
 * every running job counts as lapsed — the scanner runs under the chain's lease, so when it starts no other replica
 * can still be scanning (one that lost the lease can no longer move a checkpoint: the owner changed).
 */
export async function claimJobs(
  db: MatcherDb,
  chainId: string,
  owner: string,
  leaseMs: number,
  perKey: number,
  takeOver = false,
): Promise<BackfillJob[]> {
  return db.$client.begin(async (tx) => {
    // One lock for every chain: a key's places are counted across its chains.
    await tx`SELECT pg_advisory_xact_lock(hashtext('backfill-claims'))`;
    const open = (await tx`
      SELECT id, key_id, status, lease_owner, (lease_until > now() AND (NOT ${takeOver} OR lease_owner = ${owner})) AS live
      FROM backfills WHERE chain_id = ${chainId} AND status IN ('queued', 'running') ORDER BY id`) as {
      id: string;
      key_id: string;
      status: string;
      lease_owner: string | null;
      live: boolean | null;
    }[];
    const running = new Map<string, number>();
    for (const j of open) if (j.status === "running" && j.live) running.set(j.key_id, (running.get(j.key_id) ?? 0) + 1);
    const elsewhere = (await tx`
      SELECT key_id, count(*)::int AS n FROM backfills
      WHERE chain_id <> ${chainId} AND status = 'running' AND lease_until > now() GROUP BY key_id`) as { key_id: string; n: number }[];
    for (const r of elsewhere) running.set(r.key_id, (running.get(r.key_id) ?? 0) + r.n);
    const take: string[] = [];
    for (const j of open) {
      if (j.status === "running" && j.live) {
        if (j.lease_owner === owner) take.push(j.id);
        continue;
      }
      const n = running.get(j.key_id) ?? 0;
      if (n >= perKey) continue;
      running.set(j.key_id, n + 1);
      take.push(j.id);
    }
    const jobs: BackfillJob[] = [];
    for (const id of take) {
      const [row] = (await tx`
        UPDATE backfills SET status = 'running', lease_owner = ${owner},
          lease_until = now() + make_interval(secs => ${leaseMs / 1000}), started_at = coalesce(started_at, now())
        WHERE id = ${id} AND status IN ('queued', 'running')
        RETURNING id, subscription_id, key_id, from_block, to_block, next_block, addresses, solidified_head`) as JobRow[];
      if (row) jobs.push(toJob(row));
    }
    return jobs;
  });
}

/**
 * Moves a job's checkpoint to `nextBlock` and adds the run's counts; completes it once past its last block. False
 * when the job is no longer this replica's running job (canceled, or the lease lapsed and another took it).
 */
export async function advanceJob(
  db: MatcherDb,
  job: BackfillJob,
  owner: string,
  nextBlock: number,
  counts: { created: number; skipped: number },
): Promise<boolean> {
  const done = nextBlock > job.toBlock;
  const rows = await db.$client`
    UPDATE backfills SET next_block = ${nextBlock},
      events_created = events_created + ${counts.created}, events_skipped = events_skipped + ${counts.skipped},
      status = ${done ? "completed" : "running"}, finished_at = ${done ? new Date() : null},
      lease_owner = ${done ? null : owner}, lease_until = CASE WHEN ${done} THEN NULL ELSE lease_until END
    WHERE id = ${job.id} AND status = 'running' AND lease_owner = ${owner}
    RETURNING id`;
  return rows.length > 0;
}

/** Ends a job that cannot go on (its range is gone from the node, say). */
export async function failJob(db: MatcherDb, job: BackfillJob, owner: string, error: string): Promise<void> {
  await db.$client`
    UPDATE backfills SET status = 'failed', error = ${error}, finished_at = now(), lease_owner = NULL, lease_until = NULL
    WHERE id = ${job.id} AND status = 'running' AND lease_owner = ${owner}`;
}

/** Gives the leases back (a replica that stops cleanly): another replica takes the jobs at once. */
export async function releaseJobs(db: MatcherDb, owner: string): Promise<void> {
  await db.$client`UPDATE backfills SET lease_until = now() WHERE lease_owner = ${owner} AND status = 'running'`;
}
