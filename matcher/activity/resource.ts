// wallet.resource.*: Stake 2.0 (java-tron's balance_contract.proto), votes and reward withdrawals. Amounts are sun,
// decimal strings. What a withdrawal or a cancellation moved is not in the contract but in the transaction info:
// withdraw_expire_amount, withdraw_amount and cancel_unfreezeV2_amount ("0" when the info has none, as proto3 JSON
// leaves zeros out; blockNeedsTransactionInfo makes sure the infos of such blocks are read).
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ResourceMoveSchema } from "../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { RESOURCE_NAMES } from "../../common/contract/index.ts";
import { normalizeAddress, toAmount } from "../decode.ts";
import type { TronContractValue, TronTransactionInfo } from "../../common/tron-node/types.ts";
import { RESOURCE_CONTRACTS, type ResourceContract } from "./contracts.ts";
import { toCount } from "./numbers.ts";
import type { ActivityFields, ActivityParty } from "./types.ts";

type ResourceMove = MessageInitShape<typeof ResourceMoveSchema>;

/** java-tron's ResourceCode by number, should a node print the enum's number rather than its name. */
const RESOURCE_CODES = ["BANDWIDTH", "ENERGY", "TRON_POWER"];

/**
 * A contract's `resource`: proto3 JSON leaves the default out, and the default (0) is BANDWIDTH. One the contract
 * does not list (RESOURCE_NAMES) makes no activity: Enqueue would refuse it, and with it the block's other events.
 */
function resourceOf(value: unknown): string | null {
  if (value === undefined) return RESOURCE_CODES[0]!;
  const name = typeof value === "number" ? RESOURCE_CODES[value] : value;
  return typeof name === "string" && (RESOURCE_NAMES as readonly string[]).includes(name) ? name : null;
}

const amountOf = (value: unknown): string | null => (value === undefined ? "0" : toAmount(value));

const addressOf = (value: unknown): string | null => (typeof value === "string" ? normalizeAddress(value) : null);

/**
 * What CancelAllUnfreezeV2Contract re-staked: the sum of cancel_unfreezeV2_amount over its resources (a map; java-tron
 * prints it as [{key, value}], other encoders as {ENERGY: n}). One figure because one cancellation may span several
 * resources, hence `resource` unset. The matured unstakes it withdrew at the same time (withdraw_expire_amount) are
 * not counted: they are a withdrawal, not the cancellation.
 */
function cancelledAmount(value: unknown): string | null {
  if (value === undefined) return "0";
  if (typeof value !== "object" || value === null) return null;
  const amounts = Array.isArray(value) ? value.map((e: { value?: unknown } | null) => e?.value) : Object.values(value);
  let sum = 0n;
  for (const a of amounts) {
    const amount = amountOf(a);
    if (amount === null) return null;
    sum += BigInt(amount);
  }
  return sum.toString();
}

function votesOf(value: unknown): { address: string; count: bigint }[] | null {
  if (!Array.isArray(value)) return value === undefined ? [] : null;
  const votes: { address: string; count: bigint }[] = [];
  for (const vote of value as { vote_address?: unknown; vote_count?: unknown }[]) {
    const address = addressOf(vote?.vote_address);
    const count = toCount(vote?.vote_count);
    if (address === null || count === null) return null;
    votes.push({ address, count });
  }
  return votes;
}

/** The move a contract makes, its `receiver` for delegations; null when a field is malformed. */
function moveOf(contract: ResourceContract, v: TronContractValue, info: TronTransactionInfo | undefined): ResourceMove | null {
  const type = RESOURCE_CONTRACTS[contract];
  switch (contract) {
    case "FreezeBalanceV2Contract":
    case "UnfreezeBalanceV2Contract": {
      const resource = resourceOf(v.resource);
      const amount = amountOf(contract === "FreezeBalanceV2Contract" ? v.frozen_balance : v.unfreeze_balance);
      return resource === null || amount === null ? null : { type, resource, amount };
    }
    case "DelegateResourceContract":
    case "UnDelegateResourceContract": {
      const resource = resourceOf(v.resource);
      const amount = amountOf(v.balance);
      const receiver = addressOf(v.receiver_address);
      if (resource === null || amount === null || receiver === null) return null;
      if (contract === "UnDelegateResourceContract") return { type, resource, amount, receiver };
      const lockPeriod = toCount(v.lock_period);
      return lockPeriod === null ? null : { type, resource, amount, receiver, lock: v.lock === true, lockPeriod };
    }
    case "WithdrawExpireUnfreezeContract":
    case "WithdrawBalanceContract": {
      const amount = amountOf(contract === "WithdrawBalanceContract" ? info?.withdraw_amount : info?.withdraw_expire_amount);
      return amount === null ? null : { type, amount };
    }
    case "CancelAllUnfreezeV2Contract": {
      const amount = cancelledAmount(info?.cancel_unfreezeV2_amount);
      return amount === null ? null : { type, amount };
    }
    case "VoteWitnessContract": {
      const votes = votesOf(v.votes);
      return votes === null ? null : { type, votes };
    }
  }
}

export function decodeResourceMove(contract: ResourceContract, v: TronContractValue, info: TronTransactionInfo | undefined): ActivityFields | null {
  const owner = addressOf(v.owner_address);
  const move = owner === null ? null : moveOf(contract, v, info);
  if (owner === null || move === null) return null;
  const parties: ActivityParty[] = [{ address: owner, role: "owner" }];
  if (move.receiver) parties.push({ address: move.receiver, role: "receiver" });
  // The owner goes into the detail too: matchedAddresses names only watched addresses, so a subscription watching only
  // the receiver would not learn the delegator otherwise.
  return { family: "resource", parties, detail: { case: "resource", value: { ...move, owner } } };
}
