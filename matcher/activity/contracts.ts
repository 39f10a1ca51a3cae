// The system contracts that are account activity (docs/CONTRACT.md "Account activity"), by java-tron's contract type.
// A module of its own, importing nothing: matcher/decode.ts asks for these transactions' infos without importing
// the activity decoders.

export const PERMISSION_CONTRACT = "AccountPermissionUpdateContract";

/** Stake 2.0, votes and reward withdrawals: java-tron's contract type → the `type` of wallet.resource events. */
export const RESOURCE_CONTRACTS = {
  FreezeBalanceV2Contract: "freeze",
  UnfreezeBalanceV2Contract: "unfreeze",
  WithdrawExpireUnfreezeContract: "withdraw_unfrozen",
  CancelAllUnfreezeV2Contract: "cancel_unfreeze",
  DelegateResourceContract: "delegate",
  UnDelegateResourceContract: "undelegate",
  VoteWitnessContract: "vote",
  WithdrawBalanceContract: "withdraw_rewards",
} as const;

export type ResourceContract = keyof typeof RESOURCE_CONTRACTS;
export type ResourceMoveType = (typeof RESOURCE_CONTRACTS)[ResourceContract];

export function isResourceContract(type: string): type is ResourceContract {
  return Object.hasOwn(RESOURCE_CONTRACTS, type);
}

export const ACTIVITY_CONTRACTS: readonly string[] = [PERMISSION_CONTRACT, ...Object.keys(RESOURCE_CONTRACTS)];
