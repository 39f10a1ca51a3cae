// SYNTHESIZED transaction infos. No real /wallet/gettransactioninfobyblocknum output was recorded (see
// fixtures/tron/PROVENANCE.md), so for every block except the one recorded transaction info, the simulator
// makes the infos up in java-tron's shape: TRC-20 `Transfer` logs derived from the calldata of `transfer` and
// `transferFrom` calls. They are good enough to drive the pipeline (tests, demo, benchmark) and are NOT evidence
// that the decoder reads real node output correctly; that proof is the recorded info of tx 661f1df8….
// Responses built from them carry the header `x-tron-sim-synthesized: transaction-info`.
import type { TronBlock, TronTransaction, TronTransactionInfo } from "../../matcher/tron-types.ts";
import { TRANSFER_TOPIC } from "../../matcher/decode.ts";

const word = (hex: string) => hex.padStart(64, "0");

function transferFromCalldata(tx: TronTransaction): { from: string; to: string; amount: string } | null {
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

/** The hex-form (visible=false) infos of every transaction of `block`, in block order. */
export function synthesizeTransactionInfos(block: TronBlock, recorded: Map<string, TronTransactionInfo>): TronTransactionInfo[] {
  const number = block.block_header.raw_data.number;
  const ts = block.block_header.raw_data.timestamp;
  return (block.transactions ?? []).map((tx) => {
    const real = recorded.get(tx.txID);
    if (real) return real;
    const contract = tx.raw_data.contract[0];
    const base: TronTransactionInfo = { id: tx.txID, blockNumber: number, blockTimeStamp: ts };
    if (contract?.type !== "TriggerSmartContract") {
      return { ...base, contractResult: [""], receipt: { net_usage: 268 } };
    }
    const contractAddress = String(contract.parameter.value.contract_address ?? "");
    const ok = tx.ret?.[0]?.contractRet === "SUCCESS";
    if (!ok) {
      return {
        ...base,
        fee: 2_000_000,
        contractResult: [""],
        contract_address: contractAddress,
        receipt: { energy_usage_total: 1_000, net_fee: 345_000, result: tx.ret?.[0]?.contractRet ?? "REVERT" },
        result: "FAILED",
        resMessage: Buffer.from("REVERT opcode executed").toString("hex"),
      };
    }
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
  });
}
