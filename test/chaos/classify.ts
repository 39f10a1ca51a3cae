// Why an expected delivery never arrived: for each missed (subscription, kind, transfer), what the run's database says
// became of it — never enqueued (and whether the matcher had passed its block), held, still pending or scheduled,
// failed after its attempts ran out, marked delivered with no 2xx seen, or delivered under another subscription. The
// fault run prints this under a broken "delivered at least once", so a miss names its cause before anyone digs.
import type { SQL } from "bun";
import type { ExpectedDelivery, ReceivedRequest } from "./invariants.ts";

export interface MissedClass {
  /** What became of it ("failed after its attempts ran out", ...). */
  what: string;
  count: number;
  /** When the first and last of them were submitted, ms after `since`. */
  fromMs: number;
  toMs: number;
  examples: string[];
}

interface EventRow {
  subscription_id: string;
  kind: string;
  tx_id: string;
  id: string;
  status: string;
  held: boolean;
  held_reason: string | null;
  attempts: number;
  next_attempt_at: Date | null;
  response_status: number | null;
  last_error: string | null;
  first_attempt: Date | null;
  last_attempt: Date | null;
}

const MAX_EXAMPLES = 4;

/** Classifies every missed expected delivery against the run's database and what the receiver saw. */
export async function classifyMissed(
  db: SQL,
  missed: ExpectedDelivery[],
  requests: ReceivedRequest[],
  progress: { head: number | null; solid: number | null },
  since: number,
): Promise<MissedClass[]> {
  if (missed.length === 0) return [];
  const txIds = [...new Set(missed.map((m) => m.transfer.txId))];
  const rows = (await db`
    SELECT e.subscription_id, e.kind, e.tx_id, e.id, d.status, d.held, d.held_reason, d.attempts, d.next_attempt_at,
      d.response_status,
      (SELECT a.error FROM delivery_attempts a WHERE a.event_id = e.id AND a.event_created_at = e.created_at ORDER BY a.attempted_at DESC LIMIT 1) AS last_error,
      (SELECT min(a.attempted_at) FROM delivery_attempts a WHERE a.event_id = e.id AND a.event_created_at = e.created_at) AS first_attempt,
      (SELECT max(a.attempted_at) FROM delivery_attempts a WHERE a.event_id = e.id AND a.event_created_at = e.created_at) AS last_attempt
    FROM events e JOIN event_deliveries d ON d.event_id = e.id AND d.created_at = e.created_at
    WHERE e.tx_id = ANY(${txIds})`) as EventRow[];
  const byIdentity = new Map(rows.map((r) => [`${r.subscription_id} ${r.kind} ${r.tx_id}`, r]));
  const otherSubs = new Map<string, number>();
  for (const r of rows) otherSubs.set(`${r.kind} ${r.tx_id}`, (otherSubs.get(`${r.kind} ${r.tx_id}`) ?? 0) + 1);
  // Requests that carried the transfer's kind to a path, by (path, kind, tx): a delivery under the wrong subscription.
  const seen = new Map<string, string>();
  for (const r of requests) {
    try {
      const body = JSON.parse(r.body) as { kind?: string; subscriptionId?: string; data?: { txId?: string } };
      if (body.kind && body.data?.txId) seen.set(`${r.path} ${body.kind} ${body.data.txId}`, body.subscriptionId ?? "?");
    } catch {
      // not an event
    }
  }

  const classes = new Map<string, MissedClass>();
  const add = (what: string, m: ExpectedDelivery, detail: string) => {
    const at = m.transfer.submittedAt - since;
    const c = classes.get(what) ?? { what, count: 0, fromMs: at, toMs: at, examples: [] };
    c.count++;
    c.fromMs = Math.min(c.fromMs, at);
    c.toMs = Math.max(c.toMs, at);
    if (c.examples.length < MAX_EXAMPLES) {
      c.examples.push(`${m.path} ${m.kind.split(".").pop()} tx ${m.transfer.txId.slice(0, 12)} block ${m.blockNumber ?? "(forked away)"}, submitted +${(at / 1000).toFixed(0)} s: ${detail}`);
    }
    classes.set(what, c);
  };
  const secs = (d: Date | null) => (d ? `+${((d.getTime() - since) / 1000).toFixed(0)} s` : "never");
  for (const m of missed) {
    const row = byIdentity.get(`${m.subscriptionId} ${m.kind} ${m.transfer.txId}`);
    const wrong = seen.get(`${m.path} ${m.kind} ${m.transfer.txId}`);
    if (wrong !== undefined && wrong !== m.subscriptionId) {
      add("delivered under another subscription", m, `the request named ${wrong}`);
      continue;
    }
    if (!row) {
      const stream = m.kind.endsWith(".broadcasted") ? progress.head : progress.solid;
      const passed = m.blockNumber !== null && stream !== null && stream >= m.blockNumber;
      const others = otherSubs.get(`${m.kind} ${m.transfer.txId}`) ?? 0;
      const what = m.blockNumber === null
        ? "never enqueued (forked away, no drop recorded)"
        : passed ? "never enqueued, its block passed by the matcher" : "never enqueued, its block not reached by the matcher";
      add(what, m, `${others} other subscription(s) got this kind of it; matcher at ${stream ?? "none"}`);
      continue;
    }
    const attempts = `attempts ${row.attempts} (first ${secs(row.first_attempt)}, last ${secs(row.last_attempt)}), last answer ${row.response_status ?? row.last_error ?? "none"}`;
    if (row.status === "failed") add("failed after its attempts ran out", m, attempts);
    else if (row.status === "delivered") add("delivered per the database, no 2xx seen by the receiver", m, attempts);
    else if (row.held) add(`held (${row.held_reason ?? "no reason"})`, m, attempts);
    else add(row.attempts === 0 ? "pending, never attempted" : "pending, retrying", m, `${attempts}, next ${secs(row.next_attempt_at)}`);
  }
  return [...classes.values()].sort((a, b) => b.count - a.count);
}

/** The classification as the run prints it: a line per class with its count and span, then its examples. */
export function formatMissed(classes: MissedClass[]): string {
  const lines = ["missed deliveries by what became of them:"];
  for (const c of classes) {
    lines.push(`  ${String(c.count).padStart(5)} × ${c.what} (submitted +${(c.fromMs / 1000).toFixed(0)} s … +${(c.toMs / 1000).toFixed(0)} s)`);
    for (const e of c.examples) lines.push(`          e.g. ${e}`);
  }
  return lines.join("\n");
}
