// The fault run's invariant checker (test/chaos/invariants.ts) on hand-made records: a clean record breaks nothing,
// and each kind of breakage is counted against the invariant it breaks, and only that one.
import { expect, test } from "bun:test";
import { checkInvariants, KINDS, type ReceivedRequest, type RunRecord } from "../../chaos/invariants.ts";

const SUB = "sub_01";
const A = "TAddressWatched";
const B = "TAddressOther";
const TX1 = "aa".repeat(32);
const TX2 = "bb".repeat(32);
const HASH10 = "10".repeat(32);
const HASH11 = "11".repeat(32);

function request(kind: string, tx: string, opts: { id?: string; block?: number; hash?: string; at?: number; status?: number | null; address?: string; reason?: string } = {}): ReceivedRequest {
  const id = opts.id ?? `evt_${kind.split(".").pop()}_${tx.slice(0, 4)}`;
  const data = {
    chainId: "tron:mainnet",
    blockNumber: opts.block ?? 10,
    blockHash: opts.hash ?? HASH10,
    txId: tx,
    logIndex: -1,
    internalIndex: -1,
    matchedAddresses: [{ chainId: "tron:mainnet", address: opts.address ?? A, role: "to" }],
    ...(opts.reason ? { reason: opts.reason } : {}),
  };
  return { path: "/all", webhookId: id, body: JSON.stringify({ id, kind, subscriptionId: SUB, data }), receivedAt: opts.at ?? 2_000, status: opts.status === undefined ? 204 : opts.status };
}

function clean(): RunRecord {
  return {
    subscriptions: [{ id: SUB, path: "/all", kinds: Object.values(KINDS) }],
    transfers: [{ txId: TX1, to: A, result: "SUCCESS", submittedAt: 1_000, expirationMs: 61_000 }],
    watches: [{ subscriptionId: SUB, address: A, addSentAt: 0, addAnsweredAt: 10, removeSentAt: null, removeAnsweredAt: null }],
    canonicalTx: new Map([[TX1, { blockNumber: 10, blockHash: HASH10 }]]),
    canonicalBlocks: new Map([[10, HASH10], [11, HASH11]]),
    finalSolidTimestampMs: 100_000,
    requests: [request(KINDS.broadcasted, TX1), request(KINDS.confirmed, TX1)],
    checkpoints: [{ at: 1, head: 10, solid: 4 }, { at: 2, head: 11, solid: 5 }],
    rollbacks: [],
  };
}

function broken(run: RunRecord): Record<string, number> {
  return Object.fromEntries(checkInvariants(run).filter((r) => r.broken > 0).map((r) => [r.name, r.broken]));
}

test("a clean record: every invariant checked, none broken", () => {
  const results = checkInvariants(clean());
  expect(results.map((r) => r.broken)).toEqual([0, 0, 0, 0, 0, 0]);
  expect(results.every((r) => r.checked > 0)).toBe(true);
});

test("an expected event answered only with 500 is not delivered", () => {
  const run = clean();
  run.requests[1] = request(KINDS.confirmed, TX1, { status: 500 });
  expect(broken(run)).toEqual({ "every expected (subscription, kind, transfer) delivered at least once": 1 });
});

test("a transfer watched only after it was submitted is not expected; one never on chain nor broadcasted neither", () => {
  const run = clean();
  run.watches[0]!.addAnsweredAt = 1_500;
  run.requests = [];
  expect(broken(run)).toEqual({});
  const dropped = clean();
  dropped.canonicalTx.clear();
  dropped.requests = [];
  expect(broken(dropped)).toEqual({});
  // Broadcasted, then forked away and expired: its failed (dropped) is owed.
  dropped.requests = [request(KINDS.broadcasted, TX1)];
  expect(broken(dropped)).toEqual({ "every expected (subscription, kind, transfer) delivered at least once": 1 });
});

test("confirmed and failed for one transfer", () => {
  const run = clean();
  run.requests.push(request(KINDS.failed, TX1, { reason: "dropped" }));
  expect(broken(run)).toEqual({ "no transfer with both confirmed and failed": 1 });
});

test("a confirmed naming a block off the canonical chain", () => {
  const run = clean();
  run.requests[1] = request(KINDS.confirmed, TX1, { hash: "ff".repeat(32) });
  expect(broken(run)).toEqual({ "no confirmed for a block off the canonical chain": 1 });
});

test("an event for an address never watched, or removed before the transfer was made", () => {
  const run = clean();
  run.requests.push(request(KINDS.broadcasted, TX2, { address: B }));
  expect(broken(run)).toEqual({ "no event for an address not watched at that block": 1 });
  const removed = clean();
  Object.assign(removed.watches[0]!, { removeSentAt: 500, removeAnsweredAt: 600 });
  expect(broken(removed)).toEqual({ "no event for an address not watched at that block": 2 });
  // Removed after the transfer was made: the stream may have processed the block before the removal.
  Object.assign(removed.watches[0]!, { removeSentAt: 1_500, removeAnsweredAt: 1_600 });
  expect(broken(removed)).toEqual({});
});

test("two webhook-ids for one (subscription, kind, transfer); the same id twice is fine", () => {
  const run = clean();
  run.requests.push(request(KINDS.broadcasted, TX1));
  expect(broken(run)).toEqual({});
  run.requests.push(request(KINDS.broadcasted, TX1, { id: "evt_second" }));
  expect(broken(run)).toEqual({ "one webhook-id per identity": 1 });
});

test("a checkpoint moving back: explained by a logged rollback for the head stream only", () => {
  const run = clean();
  run.checkpoints.push({ at: 3, head: 9, solid: 5 });
  expect(broken(run)).toEqual({ "checkpoints never move backwards except by a recorded rollback": 1 });
  run.rollbacks.push({ at: 3, ancestor: 9 });
  expect(broken(run)).toEqual({});
  run.checkpoints.push({ at: 4, head: 10, solid: 4 });
  expect(broken(run)).toEqual({ "checkpoints never move backwards except by a recorded rollback": 1 });
});
