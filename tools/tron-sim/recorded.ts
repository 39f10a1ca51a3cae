// The recorded lifecycle fixtures in fixtures/tron (see PROVENANCE.md there), in the shapes the simulator serves:
// - TronGrid v1 account transactions (real failed USDT transfers: REVERT, OUT_OF_ENERGY): TronGrid adds fee and
//   resource fields to java-tron's transaction; as a block transaction they are removed (nothing signed changes),
//   and the transaction info, never recorded, is SYNTHESIZED from them (fee, receipt, java-tron's failure fields).
// - The transaction infos of testnet block 1,000,000 (real internal transfers), served with the number and
//   timestamp of the block they are placed in, beside a SYNTHESIZED contract-call transaction carrying each info's
//   txID (its raw_data_hex therefore does not hash to it).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { TRANSFER_TOPIC } from "../../matcher/decode.ts";
import type { TronTransaction, TronTransactionInfo } from "../../common/tron-node/types.ts";
import { failureMessage, transferFromCalldata } from "./txinfo.ts";

export const LIFECYCLE_FIXTURES_DIR = join(import.meta.dir, "../../fixtures/tron");
export const TRONGRID_ACCOUNT_FILE = "mainnet-account-TPcUx2iw-transactions.trongrid-v1.truncated.json";
export const TESTNET_INFOS_FILE = "testnet-block-1000000.gettransactioninfobyblocknum.json";

/** A TronGrid v1 `/v1/accounts/:addr/transactions` record: java-tron's transaction plus TronGrid's fields. */
export interface TronGridTransaction extends TronTransaction {
  ret: { contractRet: string; fee?: number }[];
  blockNumber: number;
  block_timestamp: number;
  net_usage?: number;
  net_fee?: number;
  energy_usage?: number;
  energy_fee?: number;
  energy_usage_total?: number;
  internal_transactions?: unknown[];
}

/**
 * The `data` array of the TronGrid capture. The capture was cut off inside its trailing `meta`, so the file is not
 * JSON as a whole; the array is complete and is parsed alone (it ends where `,"success"` begins).
 */
export function loadTronGridTransactions(dir = LIFECYCLE_FIXTURES_DIR): TronGridTransaction[] {
  const text = readFileSync(join(dir, TRONGRID_ACCOUNT_FILE), "utf8");
  const start = text.indexOf("[", text.indexOf('"data"'));
  const end = text.lastIndexOf('],"success"');
  if (start < 0 || end < start) throw new Error(`${TRONGRID_ACCOUNT_FILE}: no complete data array`);
  return JSON.parse(text.slice(start, end + 1)) as TronGridTransaction[];
}

/** The real transaction infos of testnet block 1,000,000 (hex form). */
export function loadTestnetInfos(dir = LIFECYCLE_FIXTURES_DIR): TronTransactionInfo[] {
  return JSON.parse(readFileSync(join(dir, TESTNET_INFOS_FILE), "utf8")) as TronTransactionInfo[];
}

/** The record as java-tron puts it in a block: TronGrid's fields removed, ret reduced to contractRet. */
export function blockTxFromTronGrid(r: TronGridTransaction): TronTransaction {
  const tx: TronTransaction = { ret: [{ contractRet: r.ret[0]!.contractRet }], txID: r.txID, raw_data: r.raw_data };
  if (r.signature) tx.signature = r.signature;
  if (r.raw_data_hex) tx.raw_data_hex = r.raw_data_hex;
  return tx;
}

const word = (hex: string) => hex.padStart(64, "0");

/**
 * SYNTHESIZED: the transaction info java-tron would serve for a TronGrid record, from its recorded fee and resource
 * fields (fee = ret[0].fee; receipt figures as recorded; a failure's `result: "FAILED"`, receipt result = contractRet
 * and resMessage). A successful `transfer`/`transferFrom` call gets the Transfer log its call data implies.
 */
export function infoFromTronGrid(r: TronGridTransaction): TronTransactionInfo {
  const contractRet = r.ret[0]!.contractRet;
  const contract = r.raw_data.contract[0]!;
  const receipt: Record<string, unknown> = {};
  for (const [k, v] of [
    ["energy_fee", r.energy_fee],
    ["energy_usage_total", r.energy_usage_total],
    ["energy_usage", r.energy_usage],
    ["net_fee", r.net_fee],
    ["net_usage", r.net_usage],
  ] as const) {
    if (typeof v === "number" && v > 0) receipt[k] = v;
  }
  const info: TronTransactionInfo = { id: r.txID, blockNumber: r.blockNumber, blockTimeStamp: r.block_timestamp };
  const fee = r.ret[0]!.fee ?? 0;
  if (fee > 0) info.fee = fee;
  if (contract.type !== "TriggerSmartContract") {
    info.receipt = receipt;
    return info;
  }
  info.contract_address = String(contract.parameter.value.contract_address ?? "");
  info.receipt = { ...receipt, result: contractRet };
  if (contractRet !== "SUCCESS") {
    info.contractResult = [""];
    info.result = "FAILED";
    info.resMessage = failureMessage(contractRet);
    return info;
  }
  info.contractResult = [word("1")];
  const log = transferFromCalldata(r);
  if (log) {
    info.log = [{ address: info.contract_address.slice(2), topics: [TRANSFER_TOPIC, word(log.from), word(log.to)], data: log.amount }];
  }
  return info;
}
