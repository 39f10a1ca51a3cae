// The shapes the deliverer's persistence reads and writes, beside the tables' own rows (schema.ts): a leaf, as
// connection.ts is, so callers can name them without importing any statement.
import type { EventViewRow } from "../payload.ts";
import type { EventRow, EventStatus } from "../schema.ts";

/** What a worker needs of a claimed event. */
export type ClaimedEvent = Pick<
  EventRow,
  "id" | "subscriptionId" | "status" | "attempts" | "cycle" | "held" | "nextAttemptAt" | "payload"
>;

/** The result of one attempt, to be written with many others in one statement. */
export interface Outcome {
  id: string;
  /** attempts before this attempt: the write only applies if nobody else recorded one meanwhile. */
  prevAttempts: number;
  /** The cycle the claim read: the write only applies if no retry or recover started another meanwhile. */
  cycle: number;
  status: EventStatus;
  attempts: number;
  delivered: boolean;
  responseStatus: number | null;
  responseBody: string;
  nextAttemptAt: Date | null;
  /** The attempt's own record (delivery_attempts), written in the same statement. */
  attempt: {
    id: string;
    at: Date;
    durationMs: number;
    /** The short reason when there was no HTTP response; null otherwise. */
    error: string | null;
    /**
     * The attempt's responseBody: the endpoint's body, or for a queue destination the broker's short answer
     * ("acked", "returned: NO_ROUTE", "no stream", "timeout"; docs: issue 12), failed attempts included; null for an
     * HTTPS attempt that got no answer (its reason is `error`).
     */
    responseBody: string | null;
  };
}

/** A position in the pending events ordered by due time (the schedule reconciliation pages through them). */
export interface OverdueCursor {
  id: string;
  dueMs: number;
}

/** What StreamEvents reads of an event: its view (payload.ts toEventView) and its stream position. */
export type StreamRow = Pick<
  EventRow,
  "id" | "subscriptionId" | "kind" | "chainId" | "status" | "attempts" | "deliveryCount" | "responseStatus" | "responseBody" | "held" | "heldReason" | "payload" | "createdAt" | "xid" | "seq"
>;

/** A position in a key's event stream: the inserting transaction's id (xid8, decimal) and the row's seq. */
export interface StreamPosition {
  xid: string;
  seq: number;
}

export interface StreamFilter {
  keyId: string;
  subscriptionIds: string[];
  kinds: string[];
  chainIds: string[];
}

export interface PageCursor {
  t: number;
  id: string;
}

/** GET /v1/events filters; an absent one does not filter. */
export interface EventSearch {
  keyId: string;
  subscriptionId?: string | undefined;
  txId?: string | undefined;
  address?: string | undefined;
  chainId?: string | undefined;
  kind?: string | undefined;
  status?: EventStatus | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
}

export interface SubscriptionHealth {
  hour: { attempts: number; succeeded: number };
  day: { attempts: number; succeeded: number };
  p50: number | null;
  p99: number | null;
  lastSuccess: Date | null;
  lastFailure: { at: Date; reason: string } | null;
  consecutiveFailures: number;
  pending: number;
  /** Success rate per hour over the last 24 hours, oldest first; -1 for an hour without attempts. */
  hourly: number[];
}

/** A search's rows (limit + 1 read as for any page), or fewer with the ref to go on after when it stopped early. */
export interface SearchPage {
  rows: EventViewRow[];
  resumeAfter?: PageCursor;
}
