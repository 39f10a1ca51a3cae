// java-tron JSON built by hand for the decoding tests, in both forms the node prints: visible=false (41-hex addresses
// in contracts, 20-byte hex log addresses) and visible=true (base58). Addresses are converted and event logs encoded
// by tronweb (its address codec, its ethers ABI coder), never by the code under test.
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import type { TronBlock, TronLog, TronTransaction, TronTransactionInfo } from "../../common/tron-node/types.ts";

// tronweb through its CommonJS build (see common/tron-address.ts).
export const { TronWeb, utils } = createRequire(import.meta.url)("tronweb") as typeof import("tronweb");

export type Form = "hex" | "visible";
export const FORMS: readonly Form[] = ["hex", "visible"];

/** A valid base58 address made from a number (distinct numbers, distinct addresses). */
export function address(n: number): string {
  return TronWeb.address.fromHex(`41${n.toString(16).padStart(40, "7")}`);
}

/** How java-tron prints an address field of a contract in the form. */
export function printed(base58: string, form: Form): string {
  return form === "hex" ? TronWeb.address.toHex(base58) : base58;
}

/** How java-tron prints a log's emitting contract in the form (20-byte hex without 41, or base58). */
export function printedLogAddress(base58: string, form: Form): string {
  return form === "hex" ? TronWeb.address.toHex(base58).slice(2) : base58;
}

let serial = 0;

/** A fresh transaction id. */
export function txId(): string {
  return createHash("sha256").update(`tx ${++serial}`).digest("hex");
}

export function tx(type: string, value: Record<string, unknown>, opts: { txID?: string; contractRet?: string } = {}): TronTransaction {
  return {
    txID: opts.txID ?? txId(),
    ret: [{ contractRet: opts.contractRet ?? "SUCCESS" }],
    raw_data: {
      contract: [{ type, parameter: { value, type_url: `type.googleapis.com/protocol.${type}` } }],
      expiration: 1_714_038_912_000,
      timestamp: 1_714_038_854_665,
    },
  };
}

export function block(transactions: TronTransaction[], number = 61_132_092): TronBlock {
  return {
    blockID: number.toString(16).padStart(64, "0"),
    block_header: { raw_data: { number, parentHash: (number - 1).toString(16).padStart(64, "0"), timestamp: 1_714_038_858_000 } },
    transactions,
  };
}

export function info(of: TronTransaction, extra: Partial<TronTransactionInfo> = {}): TronTransactionInfo {
  return { id: of.txID, blockNumber: 61_132_092, blockTimeStamp: 1_714_038_858_000, receipt: { result: "SUCCESS" }, ...extra };
}

export interface EventArg {
  type: string;
  value: unknown;
  indexed?: boolean;
}

/** An event log as the TVM writes it: topic0 = keccak256(signature), indexed arguments in topics, the rest in data. */
export function eventLog(contract: string, form: Form, signature: string, args: EventArg[]): TronLog {
  const word = (a: EventArg): string => utils.abi.encodeParams([a.type], [a.value]).slice(2);
  const indexed = args.filter((a) => a.indexed);
  const rest = args.filter((a) => !a.indexed);
  return {
    address: printedLogAddress(contract, form),
    topics: [utils.ethersUtils.id(signature).slice(2), ...indexed.map(word)],
    data: rest.length === 0 ? "" : utils.abi.encodeParams(rest.map((a) => a.type), rest.map((a) => a.value)).slice(2),
  };
}

/** A contract call (TriggerSmartContract) of `owner` to `contract`. */
export function call(owner: string, contract: string, form: Form, opts: { contractRet?: string } = {}): TronTransaction {
  return tx("TriggerSmartContract", { owner_address: printed(owner, form), contract_address: printed(contract, form), data: "" }, opts);
}
