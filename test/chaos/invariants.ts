// The fault run's verdict: given what the run did (the transfers it made, the watch changes it made through the
// public API, the simulator's final canonical chain) and what it saw (every request the receivers got, the matchers'
// checkpoints sampled over time, the rollbacks they logged), each invariant is checked and counted. Pure: no I/O.
//
// "Watched at that block" follows docs/CONTRACT.md: a kind is matched against the watch index when its stream
// processes the block, which the run cannot observe; it only knows that the processing came after the transfer was
// submitted and before the event arrived. So an event is allowed when a watch interval of its address overlaps that
// window, and expected only when the address was watched from before the submission to the end of the run; a
// transfer whose window straddles a watch change is neither expected nor forbidden.

export const KINDS = {
  broadcasted: "wallet.transfer.broadcasted",
  confirmed: "wallet.transfer.confirmed",
  failed: "wallet.transfer.failed",
} as const;

export interface MadeTransfer {
  txId: string;
  to: string;
  /** java-tron's contractRet: SUCCESS, REVERT, ... */
  result: string;
  /** When the run asked the simulator for it (wall clock). */
  submittedAt: number;
  /** raw_data.expiration (the simulator's clock). */
  expirationMs: number;
}

/** A watch of one address by one subscription: [addSentAt, removeAnsweredAt), the remove null while still watched. */
export interface WatchInterval {
  subscriptionId: string;
  address: string;
  addSentAt: number;
  addAnsweredAt: number;
  removeSentAt: number | null;
  removeAnsweredAt: number | null;
}

export interface PlannedSubscription {
  id: string;
  path: string;
  kinds: string[];
}

export interface ReceivedRequest {
  path: string;
  webhookId: string;
  body: string;
  receivedAt: number;
  status: number | null;
}

export interface CheckpointSample {
  at: number;
  head: number | null;
  solid: number | null;
}

export interface RecordedRollback {
  at: number;
  ancestor: number;
}

export interface RunRecord {
  subscriptions: PlannedSubscription[];
  transfers: MadeTransfer[];
  watches: WatchInterval[];
  /** Where each made transfer ended up on the final canonical chain (absent: not on it). */
  canonicalTx: Map<string, { blockNumber: number; blockHash: string }>;
  /** The final canonical chain's block hash by number, for every block number an event names. */
  canonicalBlocks: Map<number, string>;
  /** The final solidified head's timestamp (the simulator's clock). */
  finalSolidTimestampMs: number;
  requests: ReceivedRequest[];
  checkpoints: CheckpointSample[];
  rollbacks: RecordedRollback[];
  /** What each address of the run stands for ("removed at the failover", ...), for the examples. */
  addressLabels?: Map<string, string>;
}

export interface InvariantResult {
  name: string;
  checked: number;
  broken: number;
  /** A few of the broken cases, described. */
  examples: string[];
  /** The broken cases counted by what they have in common (kind, address role), largest first. */
  breakdown: [string, number][];
}

interface TransferData {
  chainId: string;
  blockNumber: number;
  blockHash: string;
  txId: string;
  logIndex: number;
  internalIndex: number;
  matchedAddresses: { chainId: string; address: string; role: string }[];
  reason?: string;
}

interface Delivered {
  id: string;
  kind: string;
  subscriptionId: string;
  data: TransferData;
  path: string;
  firstAt: number;
  acknowledged: boolean;
}

const MAX_EXAMPLES = 8;

interface Tally {
  name: string;
  checked: number;
  broken: number;
  examples: string[];
  groups: Map<string, number>;
  fail(example: string, group?: string): void;
}

function result(name: string): Tally {
  const r: Tally = {
    name,
    checked: 0,
    broken: 0,
    examples: [] as string[],
    groups: new Map<string, number>(),
    fail(example: string, group = "") {
      r.broken++;
      if (r.examples.length < MAX_EXAMPLES) r.examples.push(example);
      if (group) r.groups.set(group, (r.groups.get(group) ?? 0) + 1);
    },
  };
  return r;
}

const identity = (d: TransferData) => `${d.chainId}/${d.txId}/${d.logIndex}/${d.internalIndex}`;
const short = (s: string) => s.slice(0, 12);
/** A block id starts with its number: its tail tells two branches apart. */
const tail = (s: string) => `…${s.slice(-10)}`;

/** Every distinct transfer event (by webhook-id) among the requests, with when it first came and whether any was acked. */
function distinctEvents(requests: ReceivedRequest[]): Delivered[] {
  const byId = new Map<string, Delivered>();
  for (const r of requests) {
    let parsed: { id: string; kind: string; subscriptionId: string; data: TransferData };
    try {
      parsed = JSON.parse(r.body) as typeof parsed;
    } catch {
      continue;
    }
    if (!Object.values(KINDS).includes(parsed.kind as (typeof KINDS)[keyof typeof KINDS])) continue;
    const acked = r.status !== null && r.status >= 200 && r.status < 300;
    const seen = byId.get(r.webhookId);
    if (seen) {
      seen.firstAt = Math.min(seen.firstAt, r.receivedAt);
      seen.acknowledged ||= acked;
      continue;
    }
    byId.set(r.webhookId, { ...parsed, id: r.webhookId, path: r.path, firstAt: r.receivedAt, acknowledged: acked });
  }
  return [...byId.values()];
}

/** One (subscription, kind, transfer) the run expects delivered, and whether a request of it was answered 2xx. */
export interface ExpectedDelivery {
  subscriptionId: string;
  path: string;
  kind: string;
  transfer: MadeTransfer;
  /** Its block on the final canonical chain; null when a fork removed it for good. */
  blockNumber: number | null;
  acknowledged: boolean;
}

/**
 * Every expected (subscription, kind, transfer): the address watched from before the transfer was submitted to the
 * end of the run (every stream saw it watched), the kinds the subscription asked for that the transfer's fate calls for.
 */
export function expectedDeliveries(run: RunRecord, events: Delivered[] = distinctEvents(run.requests)): ExpectedDelivery[] {
  const acked = new Set(events.filter((e) => e.acknowledged).map((e) => `${e.subscriptionId} ${e.kind} ${e.data.txId}`));
  const broadcastedTx = new Set(events.filter((e) => e.kind === KINDS.broadcasted).map((e) => e.data.txId));
  const out: ExpectedDelivery[] = [];
  for (const sub of run.subscriptions) {
    for (const t of run.transfers) {
      if (!run.watches.some((w) => w.subscriptionId === sub.id && w.address === t.to && w.addAnsweredAt <= t.submittedAt && w.removeSentAt === null)) continue;
      const where = run.canonicalTx.get(t.txId);
      const expected: string[] = [];
      if (where && t.result === "SUCCESS") expected.push(KINDS.broadcasted, KINDS.confirmed);
      if (where && t.result !== "SUCCESS") expected.push(KINDS.failed);
      // Forked away for good: `failed` (dropped) once the solidified chain passed its expiration, provided the head
      // stream had broadcasted it (a fork while no matcher ran leaves nothing to drop).
      if (!where && t.result === "SUCCESS" && broadcastedTx.has(t.txId) && run.finalSolidTimestampMs > t.expirationMs) {
        expected.push(KINDS.failed);
      }
      for (const kind of expected.filter((k) => sub.kinds.includes(k))) {
        out.push({ subscriptionId: sub.id, path: sub.path, kind, transfer: t, blockNumber: where?.blockNumber ?? null, acknowledged: acked.has(`${sub.id} ${kind} ${t.txId}`) });
      }
    }
  }
  return out;
}

export function checkInvariants(run: RunRecord): InvariantResult[] {
  const events = distinctEvents(run.requests);
  const made = new Map(run.transfers.map((t) => [t.txId, t]));
  const watchesOf = (sub: string, address: string) => run.watches.filter((w) => w.subscriptionId === sub && w.address === address);
  const label = (address: string) => run.addressLabels?.get(address) ?? address;

  // 1. Every expected (subscription, kind, transfer) delivered (answered 2xx) at least once.
  const delivered = result("every expected (subscription, kind, transfer) delivered at least once");
  for (const e of expectedDeliveries(run, events)) {
    delivered.checked++;
    if (e.acknowledged) continue;
    const t = e.transfer;
    delivered.fail(
      `${e.path} ${e.kind.split(".").pop()} tx ${short(t.txId)} to ${label(t.to)}${e.blockNumber !== null ? ` block ${e.blockNumber}` : " (forked away)"} never delivered`,
      `${e.kind.split(".").pop()} to ${label(t.to)}`,
    );
  }

  // 2. No transfer with both confirmed and failed (across every subscription: finality is one fact).
  const contradiction = result("no transfer with both confirmed and failed");
  const finals = new Map<string, Set<string>>();
  for (const e of events) {
    if (e.kind === KINDS.broadcasted) continue;
    const kinds = finals.get(identity(e.data)) ?? new Set<string>();
    kinds.add(e.kind === KINDS.failed ? `failed(${e.data.reason ?? "?"})` : "confirmed");
    finals.set(identity(e.data), kinds);
  }
  for (const [id, kinds] of finals) {
    contradiction.checked++;
    if (kinds.has("confirmed") && [...kinds].some((k) => k.startsWith("failed"))) contradiction.fail(`${short(id.split("/")[1]!)}: ${[...kinds].join(" + ")}`);
  }

  // 3. No confirmed (nor failed with a contractRet, also read from a solidified block) for a block off the canonical chain.
  const offChain = result("no confirmed for a block off the canonical chain");
  for (const e of events) {
    if (e.kind === KINDS.broadcasted || (e.kind === KINDS.failed && e.data.reason === "dropped")) continue;
    offChain.checked++;
    const hash = run.canonicalBlocks.get(e.data.blockNumber);
    const where = run.canonicalTx.get(e.data.txId);
    if (hash !== e.data.blockHash) {
      offChain.fail(`${e.kind.split(".").pop()} ${e.id} tx ${short(e.data.txId)}: block ${e.data.blockNumber} ${tail(e.data.blockHash)} is not canonical (${hash ? tail(hash) : "none"})`, e.kind.split(".").pop());
    } else if (made.has(e.data.txId) && where?.blockNumber !== e.data.blockNumber) {
      offChain.fail(`${e.id} tx ${short(e.data.txId)}: not in block ${e.data.blockNumber} on the canonical chain`, e.kind.split(".").pop());
    }
  }

  // 4. No event for an address the subscription did not watch when the block could have been processed.
  const unwatched = result("no event for an address not watched at that block");
  for (const e of events) {
    unwatched.checked++;
    const from = made.get(e.data.txId)?.submittedAt ?? 0;
    for (const m of e.data.matchedAddresses) {
      const ok = watchesOf(e.subscriptionId, m.address).some((w) => w.addSentAt <= e.firstAt && (w.removeAnsweredAt ?? Infinity) >= from);
      if (!ok) {
        unwatched.fail(
          `${e.path} ${e.kind.split(".").pop()} tx ${short(e.data.txId)} for ${label(m.address)} (${watchesOf(e.subscriptionId, m.address).length === 0 ? "never watched" : "not watched then"})`,
          `${e.kind.split(".").pop()} for ${label(m.address)}`,
        );
        break;
      }
    }
  }

  // 5. One webhook-id per (subscription, kind, transfer).
  const oneId = result("one webhook-id per identity");
  const ids = new Map<string, Set<string>>();
  for (const e of events) {
    const key = `${e.subscriptionId} ${e.kind} ${identity(e.data)}`;
    const set = ids.get(key) ?? new Set<string>();
    set.add(e.id);
    ids.set(key, set);
  }
  for (const [key, set] of ids) {
    oneId.checked++;
    if (set.size > 1) oneId.fail(`${key.split(" ")[1]!.split(".").pop()} tx ${short(key.split(" ")[2]!.split("/")[1]!)}: ${set.size} events ${[...set].join(", ")}`);
  }

  // 6. Checkpoints never move backwards, except the head stream's by a rollback it logged.
  const checkpoints = result("checkpoints never move backwards except by a recorded rollback");
  const samples = [...run.checkpoints].sort((a, b) => a.at - b.at);
  for (const stream of ["head", "solid"] as const) {
    let prev: { at: number; value: number } | undefined;
    for (const s of samples) {
      const value = s[stream];
      if (value === null) continue;
      if (prev && value !== prev.value) {
        checkpoints.checked++;
        if (value < prev.value) {
          const p = prev;
          // The log line is read after the rollback committed: allow it to arrive a little after the sample.
          const explained = stream === "head" && run.rollbacks.some((r) => r.ancestor <= value && r.at >= p.at - 1_000 && r.at <= s.at + 5_000);
          if (!explained) checkpoints.fail(`${stream} checkpoint ${p.value} → ${value} with no rollback recorded`);
        }
      }
      prev = { at: s.at, value };
    }
  }

  return [delivered, contradiction, offChain, unwatched, oneId, checkpoints].map(({ name, checked, broken, examples, groups }) => ({
    name,
    checked,
    broken,
    examples,
    breakdown: [...groups].sort((a, b) => b[1] - a[1]),
  }));
}

/** The table the run prints: one line per invariant, checked and broken, then the examples of the broken ones. */
export function formatInvariants(results: InvariantResult[]): string {
  const width = Math.max(...results.map((r) => r.name.length));
  const lines = [`${"invariant".padEnd(width)}  checked  broken`];
  for (const r of results) lines.push(`${r.name.padEnd(width)}  ${String(r.checked).padStart(7)}  ${String(r.broken).padStart(6)}`);
  for (const r of results.filter((x) => x.broken > 0)) {
    lines.push(`broken: ${r.name}`);
    for (const [what, n] of r.breakdown) lines.push(`  ${String(n).padStart(5)} × ${what}`);
    for (const e of r.examples) lines.push(`  e.g. ${e}`);
  }
  return lines.join("\n");
}
