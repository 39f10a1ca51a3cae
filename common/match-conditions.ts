// A subscription's match conditions (docs/CONTRACT.md "Match conditions"): which transfers of its watched addresses make
// events. One shape for the registry (stored as jsonb), the watch index (carried beside status and kinds) and the
// matcher (applied by matcher/conditions.ts). Always held normalized: defaults filled, amounts canonical.
import { MemoMap } from "./timing.ts";

export const ASSET_STANDARDS = ["TRX", "TRC10", "TRC20"] as const;
export type AssetStandard = (typeof ASSET_STANDARDS)[number];

export const DIRECTIONS = ["incoming", "outgoing"] as const;
export type MatchDirection = (typeof DIRECTIONS)[number];

/** One listed asset; `minAmount` is base units, decimal, no leading zeros ("0" when none was given). */
export type AssetCondition =
  | { standard: "TRX"; minAmount: string }
  | { standard: "TRC10"; tokenId: string; minAmount: string }
  | { standard: "TRC20"; contract: string; minAmount: string };

export interface MatchConditions {
  /** null: every asset. */
  assets: AssetCondition[] | null;
  /** Never empty; request order, duplicates collapsed. */
  directions: MatchDirection[];
  includeZeroValue: boolean;
}

export function defaultMatch(): MatchConditions {
  return { assets: null, directions: [...DIRECTIONS], includeZeroValue: false };
}

/** The one shared, frozen default (what most subscriptions carry): never mutate a decoded value. */
export const DEFAULT_MATCH: Readonly<MatchConditions> = Object.freeze({
  assets: null,
  directions: Object.freeze([...DIRECTIONS]) as MatchDirection[],
  includeZeroValue: false,
});

/** The identity of an asset within one chain: TRX, a TRC-10 token id or a TRC-20 contract. */
export function assetKey(a: { standard: string; tokenId?: string | null; contract?: string | null }): string {
  return a.standard === "TRC10" ? `TRC10:${a.tokenId ?? ""}` : a.standard === "TRC20" ? `TRC20:${a.contract ?? ""}` : "TRX";
}

function isDefaultMatch(m: MatchConditions): boolean {
  return (
    m.assets === null &&
    !m.includeZeroValue &&
    m.directions.length === DIRECTIONS.length &&
    DIRECTIONS.every((d) => m.directions.includes(d))
  );
}

// ---- the watch index's text form ---------------------------------------------------------------------------
// "" for the default (no bytes, nothing to parse for most subscriptions), else the JSON of the normalized value.
// The JSON never holds "|" (the meta field separator): it is made only of standards, directions, digits, base58.

export function encodeMatch(m: MatchConditions): string {
  return isDefaultMatch(m) ? "" : JSON.stringify(m);
}

// Subscriptions' conditions recur block after block: each distinct text is parsed once, and the same text yields the
// same object (matcher/conditions.ts keys its compiled form on that object). Cleared wholesale when full.
const DECODE_CACHE_LIMIT = 10_000;
const decoded = new MemoMap<string, MatchConditions>(DECODE_CACHE_LIMIT);

/** The conditions of a watch-index text; a text this code cannot read means the default (never drops events). */
export function decodeMatch(text: string): MatchConditions {
  if (text === "") return DEFAULT_MATCH as MatchConditions;
  let m = decoded.get(text);
  if (m === undefined) {
    try {
      m = JSON.parse(text) as MatchConditions;
    } catch {
      m = DEFAULT_MATCH as MatchConditions;
    }
    decoded.set(text, m);
  }
  return m;
}
