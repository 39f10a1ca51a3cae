// A subscription's match conditions applied to one transfer (docs/CONTRACT.md "Match conditions"). Pure: the conditions
// come with the watcher from the watch index (common/watch-index/), so matching reads no PostgreSQL.
//   - includeZeroValue false: a transfer of amount 0 passes no role (the address-poisoning vector);
//   - assets: null lets every asset through; otherwise the transfer's asset must be listed, at or above its minAmount;
//   - directions: `incoming` keeps the role `to`, `outgoing` keeps the role `from`.
import type { MatchConditions } from "../common/match-conditions.ts";
import type { DecodedTransfer } from "./decode.ts";

export type Role = "from" | "to";

/** Listed assets -> their minAmount (canonical decimal strings); null: every asset at any amount. */
interface AssetMins {
  trx: string | undefined;
  trc10: Map<string, string>;
  trc20: Map<string, string>;
}

interface Compiled {
  from: boolean;
  to: boolean;
  zero: boolean;
  assets: AssetMins | null;
}

// The watch index hands out one object per distinct conditions text, so compiling once per object is enough; the
// map lets an object go with the watchers that hold it.
const compiled = new WeakMap<MatchConditions, Compiled>();

function compile(m: MatchConditions): Compiled {
  let c = compiled.get(m);
  if (c === undefined) {
    c = {
      from: m.directions.includes("outgoing"),
      to: m.directions.includes("incoming"),
      zero: m.includeZeroValue,
      assets: m.assets === null ? null : assetMins(m),
    };
    compiled.set(m, c);
  }
  return c;
}

function assetMins(m: MatchConditions): AssetMins {
  const out: AssetMins = { trx: undefined, trc10: new Map(), trc20: new Map() };
  for (const a of m.assets ?? []) {
    const min = BigInt(a.minAmount).toString();
    if (a.standard === "TRX") out.trx = min;
    else if (a.standard === "TRC10") out.trc10.set(a.tokenId, min);
    else out.trc20.set(a.contract, min);
  }
  return out;
}

function minFor(assets: AssetMins, t: DecodedTransfer): string | undefined {
  if (t.standard === "TRX") return assets.trx;
  if (t.standard === "TRC10") return t.tokenId === null ? undefined : assets.trc10.get(t.tokenId);
  return t.contract === null ? undefined : assets.trc20.get(t.contract);
}

/**
 * amount ≥ min for decimal strings, without BigInt on the hot path: canonical decimals (no leading zeros, as decoded
 * amounts and stored minimums are) compare by length, then digit by digit. Anything else goes through BigInt.
 */
function atLeast(amount: string, min: string): boolean {
  if (amount.length > 1 && amount.charCodeAt(0) === 48 /* "0" */) return BigInt(amount) >= BigInt(min);
  return amount.length !== min.length ? amount.length > min.length : amount >= min;
}

/** Decoded amounts are canonical decimals, but a stray "00" must not slip past as non-zero. */
function isZero(amount: string): boolean {
  return amount.charCodeAt(0) === 48 /* "0" */ && /^0+$/.test(amount);
}

/** Whether the asset and amount conditions let `t` through at all (whatever role). */
function transferPasses(c: Compiled, t: DecodedTransfer): boolean {
  if (!c.zero && isZero(t.amount)) return false;
  if (c.assets === null) return true;
  const min = minFor(c.assets, t);
  return min !== undefined && atLeast(t.amount, min);
}

/** Whether a watched address that played `role` in `t` makes an event under `match`. */
export function rolePasses(match: MatchConditions, t: DecodedTransfer, role: Role): boolean {
  const c = compile(match);
  return (role === "from" ? c.from : c.to) && transferPasses(c, t);
}

/**
 * The roles (in the order given) that pass `match` for transfer `t`, given the roles the watcher's addresses played.
 * Empty: the transfer makes no event for this subscription.
 */
export function passingRoles(match: MatchConditions, t: DecodedTransfer, roles: readonly Role[]): Role[] {
  const c = compile(match);
  if (!transferPasses(c, t)) return [];
  return roles.filter((r) => (r === "from" ? c.from : c.to));
}
