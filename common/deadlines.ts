// Every deadline of a request, derived from one budget: a request whose dependency is down or hangs answers 503
// service_unavailable (docs/CONTRACT.md: "a dependency is down; nothing was changed") within 5 s and never hangs
// (docs/api.md). Each hop keeps a margin of that budget for its own
// work and for carrying the answer back, so the innermost wait (a store's call to PostgreSQL) ends first and its
// 503 reaches the client before the outer deadlines fire.

/** The longest a request may wait on a dead dependency before it is answered 503. */
export const REQUEST_BUDGET_MS = 5_000;

/** What each hop (gateway → service, service → database) keeps of the budget for itself. */
const HOP_MARGIN_MS = 500;

/**
 * Longest a write waits for the answer to a COMMIT it already sent once its deadline has passed (the database froze
 * with the COMMIT in flight): the answer must be the real outcome, so it waits this long before giving up. Callers
 * of a write RPC allow for it in their own deadline.
 */
export const COMMIT_SETTLE_MS = 30_000;

/** The deadline of the gateway's RPC for a request with budget `budgetMs`. */
function rpcDeadline(budgetMs: number): number {
  return budgetMs - HOP_MARGIN_MS;
}

/** The deadline of a store's database work inside that RPC. */
export function storeDeadline(budgetMs: number): number {
  return rpcDeadline(budgetMs) - HOP_MARGIN_MS;
}

/** The deadline of a write RPC: the service answers 503 by its store deadline, or waits for a COMMIT in flight. */
export function writeRpcDeadline(budgetMs: number): number {
  return rpcDeadline(budgetMs) + COMMIT_SETTLE_MS;
}

/** An ordinary call: the gateway's RPC (4.5 s) and the store's database work (4 s). */
export const RPC_DEADLINE_MS = rpcDeadline(REQUEST_BUDGET_MS);
export const STORE_DEADLINE_MS = storeDeadline(REQUEST_BUDGET_MS);

/**
 * Connecting to PostgreSQL: a refused or unreachable server gives its own error two margins before the store deadline
 * would answer for it (whole seconds: the driver's unit).
 */
export const DB_CONNECT_TIMEOUT_MS = STORE_DEADLINE_MS - 2 * HOP_MARGIN_MS;

/**
 * A PATCH or PUT of up to 10,000 addresses on a large subscription needs more than the ordinary budget before its
 * COMMIT (docs/CONTRACT.md "Limits"); its RPC and store deadlines derive from this one.
 */
export const ADDRESS_CHANGE_BUDGET_MS = 10_000;

/** A readiness probe's call to a dependency: /readyz must answer well within a Kubernetes probe's timeout. */
export const PROBE_DEADLINE_MS = 1_500;

/**
 * The default deadline of internal calls that serve no client request (the matcher's Enqueue, the deliverer's
 * target refresh): long enough to ride out a busy moment, short enough that a hung peer is retried.
 */
export const BACKGROUND_RPC_DEADLINE_MS = 10_000;
