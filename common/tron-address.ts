// TRON addresses: the strict base58check form the API accepts, and conversions from the hex forms java-tron emits.
// Base58 comes from tronweb's own codec and SHA-256 from Bun's: tronweb's isAddressValid does the same checks far
// slower, and a PATCH validates up to 10,000 addresses (docs/adr/0007-address-checksum-with-bun-sha256.md).
import { createRequire } from "node:module";

/**
 * tronweb's utilities, loaded through its CommonJS build. Under Bun its ESM build fails to load about one start in
 * ten ("ReferenceError: proto is not defined" in protocol/core/contract/balance_contract_pb.cjs): those generated
 * files rely on a global `proto` that an earlier file must have created, and the ESM graph does not guarantee that
 * order, while require() does. Import tronweb's utilities from here rather than from "tronweb" or "tronweb/utils".
 */
export const tronwebUtils = createRequire(import.meta.url)("tronweb/utils") as typeof import("tronweb/utils");
const { decode58, encode58 } = tronwebUtils;

/** The version byte of every TRON account and contract address; it makes the base58 form start with `T`. */
const TRON_ADDRESS_PREFIX = 0x41;
const BASE58_LENGTH = 34;
const PAYLOAD_BYTES = 21;
const CHECKSUM_BYTES = 4;
const HEX_21 = /^41[0-9a-fA-F]{40}$/;
const HEX_WORD = /^(?:0x)?(?:[0-9a-fA-F]{24})?([0-9a-fA-F]{40})$/;

// Bun.SHA256.hash: no hash object per call (docs/adr/0007-address-checksum-with-bun-sha256.md).
function checksum(payload: Uint8Array): Uint8Array {
  const once = Bun.SHA256.hash(payload) as Uint8Array;
  return (Bun.SHA256.hash(once) as Uint8Array).subarray(0, CHECKSUM_BYTES);
}

/** The 21 payload bytes of a strict base58check TRON address, or null. */
function decodeBase58Address(s: unknown): Uint8Array | null {
  if (typeof s !== "string" || s.length !== BASE58_LENGTH) return null;
  let bytes: number[];
  try {
    bytes = decode58(s);
  } catch {
    return null; // a character outside the base58 alphabet
  }
  if (bytes.length !== PAYLOAD_BYTES + CHECKSUM_BYTES || bytes[0] !== TRON_ADDRESS_PREFIX) return null;
  const payload = Uint8Array.from(bytes.slice(0, PAYLOAD_BYTES));
  const sum = checksum(payload);
  for (let i = 0; i < CHECKSUM_BYTES; i++) if (sum[i] !== bytes[PAYLOAD_BYTES + i]) return null;
  return payload;
}

/**
 * True only for the canonical base58check form: 34 characters, version byte 0x41, valid double-SHA-256 checksum.
 * Hex forms, white space, other lengths and other version bytes are false.
 */
export function isBase58Address(s: unknown): s is string {
  return decodeBase58Address(s) !== null;
}

/** `41` + 40 lowercase hex digits. Throws on anything that is not a valid base58check TRON address. */
export function base58ToHex(address: string): string {
  const payload = decodeBase58Address(address);
  if (payload === null) throw new TypeError(`not a TRON base58check address: ${JSON.stringify(address)}`);
  return Buffer.from(payload).toString("hex");
}

/** The base58check form of a 21-byte hex address (`41` + 40 hex digits, either case). Throws on another shape. */
export function hexToBase58(hex: string): string {
  if (!HEX_21.test(hex)) throw new TypeError(`not a 21-byte TRON hex address: ${JSON.stringify(hex)}`);
  const payload = Buffer.from(hex, "hex");
  return encode58(Buffer.concat([payload, Buffer.from(checksum(payload))]));
}

/**
 * The TRON address in an EVM-style word: a 32-byte ABI word or log topic (64 hex digits) or a bare 20-byte address
 * (40), `0x` optional. Only the last 20 bytes count: calldata may carry the 0x41 byte inside the word.
 */
export function evmWordToBase58(word: string): string {
  const m = HEX_WORD.exec(word);
  if (!m) throw new TypeError(`not a 20- or 32-byte hex word: ${JSON.stringify(word)}`);
  return hexToBase58(`41${m[1]}`);
}
