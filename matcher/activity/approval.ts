// wallet.approval.*: a TRC-20 `Approval(address indexed owner, address indexed spender, uint256 value)` log from any
// contract. TRC-721's Approval has the same topic0 but indexes its token id too (4 topics): not an allowance, skipped.
// An approval of 0 (a revocation) is kept; "unlimited" (≥ 2^255) is the deliverer's to say.
import type { TronLog } from "../../common/tron-node/types.ts";
import { logAddress } from "../decode.ts";
import { addressArg, amountArg, eventTopic, eventWords, tokenAsset } from "./event-log.ts";
import type { ActivityDecodeOptions, ActivityFields } from "./types.ts";

export const APPROVAL_TOPIC = eventTopic("Approval(address,address,uint256)");

export function decodeApprovalLog(log: TronLog, opts: ActivityDecodeOptions): ActivityFields | null {
  if (log.topics?.length !== 3) return null;
  const contract = logAddress(log.address);
  const words = eventWords(log, 3);
  if (contract === null || words === null) return null;
  const owner = addressArg(words[0]!);
  const spender = addressArg(words[1]!);
  const amount = amountArg(words[2]!);
  if (owner === null || spender === null || amount === null) return null;
  return {
    family: "approval",
    parties: [
      { address: owner, role: "owner" },
      { address: spender, role: "spender" },
    ],
    detail: { case: "approval", value: { owner, spender, amount, asset: tokenAsset(opts.chainId, contract) } },
  };
}
