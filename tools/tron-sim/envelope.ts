// A transaction's envelope as java-tron prints it: raw_data around one contract, protobuf-encoded into raw_data_hex
// through tronweb, txID its SHA-256, a made-up signature. Every builder of the simulator's transactions
// (transfers, activity) closes its transaction here, so txIDs follow one scheme.
import { createRequire } from "node:module";
import type { TronTransaction } from "../../common/tron-node/types.ts";

// tronweb through its CommonJS build: under Bun its ESM build sometimes fails to load ("proto is not defined" in
// its generated protobuf files, which need a load order only require() guarantees; see common/tron-address.ts).
const { utils } = createRequire(import.meta.url)("tronweb") as typeof import("tronweb");

/** Mainnet USDT (TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t) in hex form. */
export const USDT_HEX = "41a614f803b6fd780986a42c78ec9c7f77e6ded13c";

/** The block a transaction refers to (TAPOS: ref_block_bytes, ref_block_hash). */
export interface RefBlock {
  number: number;
  blockID: string;
}

export function randomHex(rand: () => number, bytes: number): string {
  // Through a Buffer: per-byte string building was a tenth of making a block (a signature per transaction).
  const b = Buffer.allocUnsafe(bytes);
  for (let i = 0; i < bytes; i++) b[i] = Math.floor(rand() * 256);
  return b.toString("hex");
}

export function sha256Hex(data: string | Uint8Array): string {
  return new Bun.CryptoHasher("sha256").update(data).digest("hex");
}

/** raw_data's fields besides the contract; `fee_limit` is added by callers of contracts. */
export function baseRaw(ref: RefBlock, timestamp: number, memoHex?: string) {
  return {
    ref_block_bytes: (ref.number & 0xffff).toString(16).padStart(4, "0"),
    ref_block_hash: ref.blockID.slice(16, 32),
    expiration: timestamp + 60_000,
    timestamp: timestamp - 3_000,
    // The memo is raw_data field 10 (bytes); java-tron prints it as hex, tronweb encodes it into raw_data_hex.
    ...(memoHex ? { data: memoHex.toLowerCase() } : {}),
  };
}

/** One contract as raw_data.contract[0]: `value` in java-tron's hex form, `permissionId` its Permission_id. */
export function contractEntry(type: string, value: Record<string, unknown>, permissionId?: number): TronTransaction["raw_data"]["contract"][number] {
  const entry: TronTransaction["raw_data"]["contract"][number] = { parameter: { value, type_url: `type.googleapis.com/protocol.${type}` }, type };
  if (permissionId) entry.Permission_id = permissionId;
  return entry;
}

/** The transaction: raw_data_hex is raw_data protobuf-encoded by tronweb, txID its SHA-256. */
export function finishTransaction(raw: TronTransaction["raw_data"], result: string, rand: () => number): TronTransaction {
  const draft = { raw_data: raw } as TronTransaction;
  const pb = utils.transaction.txJsonToPb(draft);
  const rawHex = utils.transaction.txPbToRawDataHex(pb).toLowerCase();
  const txID = sha256Hex(Buffer.from(rawHex, "hex"));
  return {
    ret: [{ contractRet: result }],
    signature: [randomHex(rand, 65)],
    txID,
    raw_data: raw,
    raw_data_hex: rawHex,
  };
}
