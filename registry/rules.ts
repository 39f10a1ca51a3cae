// The registry's business rules for subscriptions and keys (docs/CONTRACT.md "Limits" and "Subscriptions"): pure checks
// that either return the normalized value or throw the public ApiError. The destination URL (shape, DNS, SSRF)
// is checked by common/ssrf.ts checkDestinationUrl, which the deliverer shares; queue destinations by destination.ts.
import { randomBytes } from "node:crypto";
import {
  ApiError,
  DEFAULT_GRACE_SECONDS,
  MAX_DESCRIPTION_LENGTH,
  MAX_EVENTS,
  MAX_GRACE_SECONDS,
  MAX_MATCH_ASSETS,
  TRON_CHAINS,
  invalidRequest,
  isChainId,
  isEventKind,
  type ChainId,
} from "../common/contract/index.ts";
import {
  ASSET_STANDARDS,
  DIRECTIONS,
  assetKey,
  defaultMatch,
  type AssetCondition,
  type AssetStandard,
  type MatchConditions,
  type MatchDirection,
} from "../common/match-conditions.ts";
import { isBase58Address } from "../common/tron-address.ts";
import type { MatchConditions as MatchConditionsMessage } from "../gen/webhooks/registry/v1/registry_pb.ts";

const STATUSES = ["enabled", "disabled"] as const;
export type SubscriptionStatus = (typeof STATUSES)[number];

/** 1 to MAX_EVENTS distinct event kinds, duplicates collapsed in order; an unknown kind is unsupported_event. */
export function checkEvents(events: readonly string[]): string[] {
  const distinct = [...new Set(events)];
  if (distinct.length === 0) throw invalidRequest("events must list at least one event kind.", "/events");
  if (distinct.length > MAX_EVENTS) throw invalidRequest(`events may list at most ${MAX_EVENTS} distinct kinds.`, "/events");
  for (const event of distinct) {
    if (!isEventKind(event)) {
      throw new ApiError("unsupported_event", `The event kind "${event}" is not supported.`, { event });
    }
  }
  return distinct;
}

// ---- match conditions (docs/CONTRACT.md "Match conditions") ----

const DIGITS = /^[0-9]+$/;
/** The largest amount a transfer can carry (TRC-20 amounts are uint256). */
const MAX_AMOUNT = (1n << 256n) - 1n;
const MAX_TOKEN_ID = (1n << 63n) - 1n;

/** A decimal amount in base units, canonical (no leading zeros); "0" when unset. */
function checkMinAmount(value: string | undefined, param: string): string {
  if (value === undefined) return "0";
  if (!DIGITS.test(value) || value.length > 80 || BigInt(value) > MAX_AMOUNT) {
    throw invalidRequest("minAmount must be a decimal string of base units from 0 to 2^256-1.", param);
  }
  return BigInt(value).toString();
}

function checkAsset(a: NonNullable<MatchConditionsMessage["assets"]>["items"][number], at: string): AssetCondition {
  if (!(ASSET_STANDARDS as readonly string[]).includes(a.standard)) {
    throw invalidRequest(`standard must be one of ${ASSET_STANDARDS.join(", ")}.`, `${at}/standard`);
  }
  const standard = a.standard as AssetStandard;
  // A field of another standard is a mistake worth reporting (a TRC-20 entry given a tokenId means something else).
  if (standard !== "TRC10" && a.tokenId !== undefined) throw invalidRequest("tokenId belongs to TRC10 entries only.", `${at}/tokenId`);
  if (standard !== "TRC20" && a.contract !== undefined) throw invalidRequest("contract belongs to TRC20 entries only.", `${at}/contract`);
  const minAmount = checkMinAmount(a.minAmount, `${at}/minAmount`);
  if (standard === "TRC10") {
    const id = a.tokenId;
    if (id === undefined || !/^[1-9][0-9]{0,18}$/.test(id) || BigInt(id) > MAX_TOKEN_ID) {
      throw invalidRequest("A TRC10 entry needs tokenId: the token's decimal id, e.g. \"1002000\".", `${at}/tokenId`);
    }
    return { standard, tokenId: id, minAmount };
  }
  if (standard === "TRC20") {
    if (!isBase58Address(a.contract)) {
      throw invalidRequest("A TRC20 entry needs contract: the token contract's base58check address (T...).", `${at}/contract`);
    }
    return { standard, contract: a.contract, minAmount };
  }
  return { standard, minAmount };
}

/**
 * A request's match conditions, normalized with defaults filled; unset means the default. `assets` and
 * `directions` may not be empty (a subscription that can never match is a mistake; disabling it is the way to
 * pause it); an asset listed twice is invalid (which minAmount would apply?); duplicate directions collapse.
 */
export function checkMatch(input: MatchConditionsMessage | undefined): MatchConditions {
  const out = defaultMatch();
  if (!input) return out;
  if (input.assets) {
    const items = input.assets.items;
    if (items.length === 0) throw invalidRequest("assets must list at least one asset; null lets every asset through.", "/match/assets");
    if (items.length > MAX_MATCH_ASSETS) throw invalidRequest(`assets may list at most ${MAX_MATCH_ASSETS} entries.`, "/match/assets");
    const seen = new Map<string, number>();
    out.assets = items.map((item, i) => {
      const asset = checkAsset(item, `/match/assets/${i}`);
      const key = assetKey(asset);
      const first = seen.get(key);
      if (first !== undefined) throw invalidRequest(`This asset is already listed at /match/assets/${first}.`, `/match/assets/${i}`);
      seen.set(key, i);
      return asset;
    });
  }
  if (input.directions) {
    const items = input.directions.items;
    if (items.length === 0) throw invalidRequest('directions must list "incoming", "outgoing" or both.', "/match/directions");
    const directions: MatchDirection[] = [];
    items.forEach((d, i) => {
      if (!(DIRECTIONS as readonly string[]).includes(d)) {
        throw invalidRequest('Each direction must be "incoming" or "outgoing".', `/match/directions/${i}`);
      }
      if (!directions.includes(d as MatchDirection)) directions.push(d as MatchDirection);
    });
    out.directions = directions;
  }
  if (input.includeZeroValue !== undefined) out.includeZeroValue = input.includeZeroValue;
  return out;
}

/** "" means the default, enabled. */
export function checkStatus(status: string): SubscriptionStatus {
  if (status === "") return "enabled";
  if ((STATUSES as readonly string[]).includes(status)) return status as SubscriptionStatus;
  throw invalidRequest('status must be "enabled" or "disabled".', "/status");
}

export function checkDescription(description: string): string {
  // PostgreSQL text cannot hold NUL; refusing it here keeps it a client error, never a failed INSERT.
  if (description.includes("\u0000")) throw invalidRequest("description must not contain a NUL character.", "/description");
  let count = 0;
  for (const _ of description) {
    if (++count > MAX_DESCRIPTION_LENGTH) {
      throw new ApiError(
        "description_too_long",
        `description must be at most ${MAX_DESCRIPTION_LENGTH} characters.`,
        { max: MAX_DESCRIPTION_LENGTH },
      );
    }
  }
  return description;
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
    throw invalidRequest('secret must be "whsec_" followed by the base64 of 24 to 64 bytes.', "/secret");
  }
  return secret;
}

/** undefined means the default grace (a day). */
export function checkGracePeriod(seconds: number | undefined): number {
  if (seconds === undefined) return DEFAULT_GRACE_SECONDS;
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_GRACE_SECONDS) {
    throw invalidRequest(`gracePeriodSeconds must be an integer from 0 to ${MAX_GRACE_SECONDS}.`, "/gracePeriodSeconds");
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
    throw invalidRequest("A key needs at least one chain.", "chains");
  }
  return out;
}
