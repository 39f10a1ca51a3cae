// The txId and address filters of the event search (GET /v1/events, SearchEvents over Connect), checked the same
// way on both sides: a malformed value is the caller's mistake, never an empty result (docs/CONTRACT.md, error codes).
import { ApiError, invalidRequest } from "./contract/index.ts";
import { isBase58Address } from "./tron-address.ts";

/** A TRON transaction id: the SHA-256 of the raw transaction, 64 hex digits (java-tron writes them lowercase). */
const TX_ID = /^[0-9a-fA-F]{64}$/;

/**
 * Most refs (an address's or a txId's events) one search request reads. When the other filters, or a subscription
 * being deleted, leave out most of the refs' events, the search stops here and answers with a short page (possibly
 * empty) whose token goes on after the last ref read: a request stays well inside its deadline however many refs
 * it would otherwise skip.
 */
export const SEARCH_REFS_PER_REQUEST = 10_000;

export function isTxId(value: string): boolean {
  return TX_ID.test(value);
}

export interface EventSearchFilters {
  /** "" for no filter. */
  txId: string;
  /** "" for no filter. */
  address: string;
}

/**
 * The filters as the event log stores them (txId lowercased), or an error at the offending query parameter:
 * `invalid_request` for a txId that is not 64 hex digits, `invalid_address` for an address that is not the strict
 * base58check form every other address input of the API requires.
 */
export function checkEventSearchFilters(f: EventSearchFilters): EventSearchFilters {
  if (f.txId !== "" && !isTxId(f.txId)) {
    throw invalidRequest("txId must be a transaction id of 64 hex digits.", "txId");
  }
  if (f.address !== "" && !isBase58Address(f.address)) {
    throw new ApiError("invalid_address", "address must be a base58check TRON address (34 characters starting with T).", { param: "address" });
  }
  return { txId: f.txId.toLowerCase(), address: f.address };
}
