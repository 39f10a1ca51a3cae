// java-tron prints the same data two ways: visible=false (its default: 21-byte hex addresses "41…", TRC-10
// asset names as hex of their ASCII) and visible=true (base58check addresses, asset names as text). The simulator
// keeps every block in the hex form and renders the other on request, as java-tron does.
import { base58ToHex, hexToBase58 } from "../../common/tron-address.ts";

const HEX_ADDRESS_41 = /^41[0-9a-f]{40}$/i;
const BASE58_ADDRESS = /^T[1-9A-HJ-NP-Za-km-z]{33}$/;
const HEX_20 = /^[0-9a-f]{40}$/i;

// Generated blocks draw addresses from a pool, so conversions repeat: remember them.
const toB58 = new Map<string, string>();
const toHex = new Map<string, string>();

function b58(hex: string): string {
  const key = hex.toLowerCase();
  let v = toB58.get(key);
  if (v === undefined) {
    v = hexToBase58(key);
    if (toB58.size > 1_000_000) toB58.clear();
    toB58.set(key, v);
  }
  return v;
}

function hex(base58: string): string {
  let v = toHex.get(base58);
  if (v === undefined) {
    v = base58ToHex(base58).toLowerCase();
    if (toHex.size > 1_000_000) toHex.clear();
    toHex.set(base58, v);
  }
  return v;
}

export function addressToBase58(address: string): string {
  if (BASE58_ADDRESS.test(address)) return address;
  if (HEX_20.test(address)) return b58(`41${address}`);
  return b58(address);
}

export function addressToHex(address: string): string {
  if (HEX_ADDRESS_41.test(address)) return address.toLowerCase();
  return hex(address);
}

function isAddressKey(key: string): boolean {
  return key.endsWith("address") || key === "address";
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function mapTree(value: Json, leaf: (key: string, v: string, inLog: boolean) => string, key = "", inLog = false): Json {
  if (Array.isArray(value)) return value.map((v) => mapTree(v, leaf, key, inLog));
  if (value !== null && typeof value === "object") {
    const out: { [key: string]: Json } = {};
    for (const [k, v] of Object.entries(value)) out[k] = mapTree(v, leaf, k, inLog || k === "log");
    return out;
  }
  if (typeof value === "string") return leaf(key, value, inLog);
  return value;
}

/** A block, transaction or transaction info in hex form rendered as visible=true. */
export function renderVisible<T>(hexForm: T): T {
  return mapTree(hexForm as Json, (key, v, inLog) => {
    if (key === "asset_name") return Buffer.from(v, "hex").toString("utf8");
    // Log addresses are 20 bytes without the 41 prefix in hex form.
    if (inLog && key === "address" && HEX_20.test(v)) return b58(`41${v}`);
    if (isAddressKey(key) && HEX_ADDRESS_41.test(v)) return b58(v);
    return v;
  }) as T;
}

/** The inverse: a visible=true document in hex form (the recorded base58 block is stored this way). */
export function toHexForm<T>(visibleForm: T): T {
  return mapTree(visibleForm as Json, (key, v, inLog) => {
    if (key === "asset_name") return Buffer.from(v, "utf8").toString("hex");
    if (inLog && key === "address" && BASE58_ADDRESS.test(v)) return hex(v).slice(2);
    if (isAddressKey(key) && BASE58_ADDRESS.test(v)) return hex(v);
    return v;
  }) as T;
}
