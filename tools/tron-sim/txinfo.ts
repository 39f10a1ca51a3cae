// SYNTHESIZED transaction infos. No real /wallet/gettransactioninfobyblocknum output was recorded (see
// fixtures/tron/PROVENANCE.md), so for every block except the one recorded transaction info, the simulator
// makes the infos up in java-tron's shape: TRC-20 `Transfer` logs derived from the calldata of `transfer` and
// `transferFrom` calls, and what an activity's transaction makes its info say (activity.ts: Approval and blacklist
// logs, withdrawn amounts, a permission update's fee). They are good enough to drive the pipeline (tests, demo, benchmark) and are NOT evidence
// that the decoder reads real node output correctly; that proof is the recorded info of tx 661f1df8….
// Responses built from them carry the header `x-tron-sim-synthesized: transaction-info`.
// Fees and receipts follow java-tron's shapes: a transfer burns 268,000 sun of bandwidth (net_fee); a successful
// USDT call 13,735,500 (energy + bandwidth); a REVERT is charged the energy it used plus bandwidth (2,086,320, as a
// recorded REVERT was), an OUT_OF_ENERGY the energy up to its limit (999,600, likewise); a failure carries
// `result: "FAILED"`, the receipt's result (= contractRet) and java-tron's resMessage.
import type { TronBlock, TronInternalTransaction, TronTransaction, TronTransactionInfo } from "../../common/tron-node/types.ts";
import { TRANSFER_TOPIC } from "../../matcher/decode.ts";
import type { InfoExtra } from "./activity.ts";
import type { InternalSpec } from "./generate.ts";

/** java-tron's resMessage (hex of the text) for a failed contract call. */
export function failureMessage(result: string): string {
  const text = result === "OUT_OF_ENERGY"
    ? "Not enough energy for 'SSTORE' operation executing: curInvokeEnergyLimit[0], curOpEnergy[20000], usedEnergy[0]"
    : result === "REVERT"
      ? "REVERT opcode executed"
      : result;
  return Buffer.from(text, "utf8").toString("hex");
}

const word = (hex: string) => hex.padStart(64, "0");

/** The TRC-20 transfer a `transfer`/`transferFrom` call encodes (20-byte hex addresses, hex amount word). */
export function transferFromCalldata(tx: TronTransaction): { from: string; to: string; amount: string } | null {
  const v = tx.raw_data.contract[0]?.parameter.value;
  const data = typeof v?.data === "string" ? v.data.toLowerCase() : "";
  const owner = typeof v?.owner_address === "string" ? v.owner_address : "";
  // Address words keep only their last 20 bytes: real calldata sometimes carries the 0x41 prefix inside the word.
  if (data.startsWith("a9059cbb") && data.length >= 8 + 128) {
    return { from: owner.slice(2), to: data.slice(8 + 24, 8 + 64), amount: data.slice(8 + 64, 8 + 128) };
  }
  if (data.startsWith("23b872dd") && data.length >= 8 + 192) {
    return { from: data.slice(8 + 24, 8 + 64), to: data.slice(8 + 64 + 24, 8 + 128), amount: data.slice(8 + 128, 8 + 192) };
  }
  return null;
}

/** java-tron's internal_transactions entries for the moves `caller` (a contract, hex) makes in transaction `txId`. */
export function internalTransactions(txId: string, caller: string, moves: InternalSpec[]): TronInternalTransaction[] {
  return moves.map((m, i) => {
    const amount = Number(m.amount);
    const value = amount > 0 ? { callValue: amount, ...(m.tokenId ? { tokenId: m.tokenId } : {}) } : {};
    const entry: TronInternalTransaction = {
      hash: new Bun.CryptoHasher("sha256").update(`${txId}:${i}`).digest("hex"),
      caller_address: caller,
      transferTo_address: m.to,
      callValueInfo: [value],
      note: Buffer.from("call").toString("hex"),
    };
    if (m.rejected) entry.rejected = true;
    return entry;
  });
}

function failedCall(base: TronTransactionInfo, contractAddress: string, result: string): TronTransactionInfo {
  const receipt = result === "OUT_OF_ENERGY"
    ? { energy_fee: 999_600, energy_usage_total: 2_380, net_usage: 345, result }
    : { energy_fee: 1_741_320, energy_usage_total: 4_146, net_fee: 345_000, result };
  return {
    ...base,
    fee: receipt.energy_fee + (receipt.net_fee ?? 0),
    contractResult: [""],
    contract_address: contractAddress,
    receipt,
    result: "FAILED",
    resMessage: failureMessage(result),
  };
}

/**
 * The hex-form (visible=false) infos of every transaction of `block`, in block order. An info `known` has (recorded,
 * or placed whole) is served as it is, with the number and timestamp of the block it is in; the rest are synthesized,
 * with the `extras` made with the transaction (the internal transactions a test asked for, an activity's logs and
 * amounts) added or replacing synthesized fields.
 */
export function synthesizeTransactionInfos(
  block: TronBlock,
  known: (txId: string) => TronTransactionInfo | undefined,
  extras: Map<string, InfoExtra> = new Map(),
): TronTransactionInfo[] {
  const number = block.block_header.raw_data.number;
  const ts = block.block_header.raw_data.timestamp;
  return (block.transactions ?? []).map((tx) => {
    const real = known(tx.txID);
    if (real) return real.blockNumber === number ? real : { ...real, blockNumber: number, blockTimeStamp: ts };
    const info = synthesizeOne(tx, { id: tx.txID, blockNumber: number, blockTimeStamp: ts });
    const extra = extras.get(tx.txID);
    return extra ? { ...info, ...extra } : info;
  });
}

function synthesizeOne(tx: TronTransaction, base: TronTransactionInfo): TronTransactionInfo {
  const contract = tx.raw_data.contract[0];
  if (contract?.type !== "TriggerSmartContract") {
    return { ...base, fee: 268_000, contractResult: [""], receipt: { net_fee: 268_000 } };
  }
  const contractAddress = String(contract.parameter.value.contract_address ?? "");
  const contractRet = tx.ret?.[0]?.contractRet ?? "SUCCESS";
  if (contractRet !== "SUCCESS") return failedCall(base, contractAddress, contractRet);
  const transfer = transferFromCalldata(tx);
  const info: TronTransactionInfo = {
    ...base,
    fee: 13_735_500,
    contractResult: [word("1")],
    contract_address: contractAddress,
    receipt: { energy_fee: 13_390_500, energy_usage_total: 31_895, net_fee: 345_000, result: "SUCCESS" },
  };
  if (transfer) {
    info.log = [
      {
        address: contractAddress.slice(2),
        topics: [TRANSFER_TOPIC, word(transfer.from), word(transfer.to)],
        data: transfer.amount,
      },
    ];
  }
  return info;
}
