// What the matcher decodes of a block beside its transfers: account activity (docs/CONTRACT.md "Account activity").
// The details are the protobuf messages' shapes (proto/webhooks/delivery/v1/delivery.proto), so what is decoded is
// what the deliverer receives; addresses are base58check.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ActivitySchema } from "../../gen/webhooks/delivery/v1/delivery_pb.ts";
import type { ActivityFamily, ActivityRole, ChainId } from "../../common/contract/index.ts";

/** Activity.detail: which family, and its fields. */
export type ActivityDetail = NonNullable<MessageInitShape<typeof ActivitySchema>["detail"]>;

export interface ActivityParty {
  address: string;
  role: ActivityRole;
}

export interface DecodedActivity {
  family: ActivityFamily;
  txId: string;
  /** The log's index in its transaction (approvals, blacklist events); -1 for a contract. */
  logIndex: number;
  /** The addresses the activity touches and the role each plays, in the contract's order (one address may play two). */
  parties: ActivityParty[];
  detail: ActivityDetail;
  /** The transaction info's fee in sun, decimal; "0" when none. */
  fee: string;
  /** java-tron's contractRet verbatim ("SUCCESS" for every activity the matcher keeps). */
  result: string;
}

/** What a family's decoder makes of one contract or log; the transaction adds its id, fee and result. */
export type ActivityFields = Pick<DecodedActivity, "family" | "parties" | "detail">;

export interface ActivityDecodeOptions {
  chainId: ChainId;
  /** The contracts (base58) whose AddedBlackList / RemovedBlackList / DestroyedBlackFunds logs count on this chain. */
  blacklistContracts: ReadonlySet<string>;
}
