// An event's main fields in a few words, for the event list (docs/console.md): the amount and asset of a transfer or
// an approval, the type and resource of a resource move, the type of a permission update or a blacklist event.
import type { EventView } from "./api.ts";

type Payload = EventView["payload"];
type Asset = { standard: string; contract: string | null; tokenId: string | null; symbol: string | null; decimals: number | null };

/** Base units in whole tokens, exactly (BigInt, never a float), without trailing zeros: "6868769", 6 → "6.868769". */
export function formatUnits(amount: string, decimals: number): string {
  if (!/^[0-9]+$/.test(amount)) return amount;
  if (decimals <= 0) return BigInt(amount).toLocaleString("en-US");
  const digits = amount.padStart(decimals + 1, "0");
  const whole = BigInt(digits.slice(0, -decimals)).toLocaleString("en-US");
  const fraction = digits.slice(-decimals).replace(/0+$/, "");
  return fraction ? `${whole}.${fraction}` : whole;
}

/** A token by its symbol, else its contract or TRC-10 id. */
function assetName(a: Asset): string {
  return a.symbol ?? a.contract ?? (a.tokenId ? `TRC-10 ${a.tokenId}` : a.standard);
}

/** An amount of an asset: in whole tokens when its decimals are known, in base units otherwise. */
function amountOf(amount: string, a: Asset): string {
  return a.decimals === null ? `${amount} base units of ${assetName(a)}` : `${formatUnits(amount, a.decimals)} ${assetName(a)}`;
}

/** TRX in sun, as the resource contracts give it. */
const TRX: Asset = { standard: "TRX", contract: null, tokenId: null, symbol: "TRX", decimals: 6 };

export function eventSummary(p: Payload): string {
  switch (p.kind) {
    case "wallet.transfer.broadcasted":
    case "wallet.transfer.confirmed":
      return amountOf(p.data.amount, p.data.asset);
    case "wallet.transfer.failed":
      return `${amountOf(p.data.amount, p.data.asset)} (${p.data.reason})`;
    case "wallet.approval.broadcasted":
    case "wallet.approval.confirmed": {
      const d = p.data;
      if (d.unlimited) return `unlimited ${assetName(d.asset)}`;
      return d.amount === "0" ? `0 ${assetName(d.asset)} (revoked)` : amountOf(d.amount, d.asset);
    }
    case "wallet.permission.broadcasted":
    case "wallet.permission.confirmed": {
      const o = p.data.owner;
      return `permission update: owner ${o.threshold} of ${o.keys.length} ${o.keys.length === 1 ? "key" : "keys"}`;
    }
    case "wallet.resource.broadcasted":
    case "wallet.resource.confirmed": {
      const d = p.data;
      return [d.type, d.resource, d.amount === null ? null : amountOf(d.amount, TRX)].filter((x) => x !== null).join(" ");
    }
    case "wallet.blacklist.broadcasted":
    case "wallet.blacklist.confirmed": {
      const d = p.data;
      return d.amount === null ? `${d.type} ${assetName(d.asset)}` : `${d.type} ${amountOf(d.amount, d.asset)}`;
    }
    default:
      return "";
  }
}
