// The registry's business rules for subscriptions and keys (CONTRACT.md "Limits" and "Subscriptions"): pure checks
// that either return the normalized value or throw the public ApiError. The destination URL (shape, DNS, SSRF)
// is checked by common/ssrf.ts checkDestinationUrl, which the deliverer shares.
import { randomBytes } from "node:crypto";
import { TRON_CHAINS, isChainId, type ChainId } from "../common/config.ts";
import { ApiError } from "../common/errors.ts";

export const SUPPORTED_EVENTS = ["wallet.transfer.broadcasted", "service.ping"] as const;
export const PLANNED_EVENTS = ["wallet.transfer.confirmed", "wallet.transfer.failed"] as const;
export const MAX_EVENTS = 16;
export const MAX_DESCRIPTION_CODE_POINTS = 512;
export const STATUSES = ["enabled", "disabled"] as const;
export type SubscriptionStatus = (typeof STATUSES)[number];

export const DEFAULT_GRACE_SECONDS = 86_400;
export const MAX_GRACE_SECONDS = 604_800;

export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 200;

function invalid(message: string, param: string): ApiError {
  return new ApiError("invalid_request", message, { param });
}

/** The destination's type; the URL itself is checked by common/ssrf.ts checkDestinationUrl (shape, DNS, SSRF). */
export function checkDestinationType(type: string): void {
  if (type !== "https") throw invalid('destination.type must be "https".', "/destination/type");
}

/** 1 to 16 distinct event kinds, duplicates collapsed in order; planned and unknown kinds are unsupported_event. */
export function checkEvents(events: readonly string[]): string[] {
  const distinct = [...new Set(events)];
  if (distinct.length === 0) throw invalid("events must list at least one event kind.", "/events");
  if (distinct.length > MAX_EVENTS) throw invalid(`events may list at most ${MAX_EVENTS} distinct kinds.`, "/events");
  for (const event of distinct) {
    if ((PLANNED_EVENTS as readonly string[]).includes(event)) {
      throw new ApiError("unsupported_event", `The event kind "${event}" is planned but not available yet.`, {
        event,
        planned: true,
      });
    }
    if (!(SUPPORTED_EVENTS as readonly string[]).includes(event)) {
      throw new ApiError("unsupported_event", `The event kind "${event}" is not supported.`, { event });
    }
  }
  return distinct;
}

/** "" means the default, enabled. */
export function checkStatus(status: string): SubscriptionStatus {
  if (status === "") return "enabled";
  if ((STATUSES as readonly string[]).includes(status)) return status as SubscriptionStatus;
  throw invalid('status must be "enabled" or "disabled".', "/status");
}

export function checkDescription(description: string): string {
  // PostgreSQL text cannot hold NUL; refusing it here keeps it a client error, never a failed INSERT.
  if (description.includes("\u0000")) throw invalid("description must not contain a NUL character.", "/description");
  let count = 0;
  for (const _ of description) {
    if (++count > MAX_DESCRIPTION_CODE_POINTS) {
      throw new ApiError(
        "description_too_long",
        `description must be at most ${MAX_DESCRIPTION_CODE_POINTS} characters.`,
        { max: MAX_DESCRIPTION_CODE_POINTS },
      );
    }
  }
  return description;
}

/** List limit: 0 (unset) is the default, above the maximum is clamped, negative is invalid. */
export function checkLimit(limit: number): number {
  if (limit === 0) return DEFAULT_PAGE_LIMIT;
  if (!Number.isInteger(limit) || limit < 0) throw invalid("limit must be an integer from 1 to 200.", "limit");
  return Math.min(limit, MAX_PAGE_LIMIT);
}

export function generateSigningSecret(): string {
  return "whsec_" + randomBytes(32).toString("base64");
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A given secret: "whsec_" + standard base64 of 24 to 64 bytes. */
export function checkGivenSecret(secret: string): string {
  const body = secret.startsWith("whsec_") ? secret.slice(6) : undefined;
  const bytes = body !== undefined && BASE64.test(body) ? Buffer.from(body, "base64").length : -1;
  if (bytes < 24 || bytes > 64) {
    throw invalid('secret must be "whsec_" followed by the base64 of 24 to 64 bytes.', "/secret");
  }
  return secret;
}

/** undefined means the default grace (a day). */
export function checkGracePeriod(seconds: number | undefined): number {
  if (seconds === undefined) return DEFAULT_GRACE_SECONDS;
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_GRACE_SECONDS) {
    throw invalid(`gracePeriodSeconds must be an integer from 0 to ${MAX_GRACE_SECONDS}.`, "/gracePeriodSeconds");
  }
  return seconds;
}

/** A key's chains: recognized CAIP-2 ids, duplicates collapsed in order; empty means all three when `emptyIsAll`. */
export function checkKeyChains(chains: readonly string[], emptyIsAll: boolean): ChainId[] {
  const out: ChainId[] = [];
  for (const chain of chains) {
    if (!isChainId(chain)) {
      throw new ApiError("invalid_chain", `Unknown chain "${chain}"; expected one of ${TRON_CHAINS.join(", ")}.`, {
        chain,
      });
    }
    if (!out.includes(chain)) out.push(chain);
  }
  if (out.length === 0) {
    if (emptyIsAll) return [...TRON_CHAINS];
    throw invalid("A key needs at least one chain.", "chains");
  }
  return out;
}
