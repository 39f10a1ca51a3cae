// What a customer's endpoint receives, for the OpenAPI document's `webhooks` section and the README's "Events":
// one payload schema per event kind (docs/CONTRACT.md "Events and delivery", "Transfer lifecycle" and "Account
// activity"), when each fires, the guarantees a receiver can build on, the delivery headers and a full example of
// each, signed for real.
import { t, type Static, type TSchema } from "elysia";
import {
  BLACKLIST_TYPES,
  CHAIN_CHOICES,
  RESOURCE_MOVE_TYPES,
  RESOURCE_NAMES,
  type ActivityKind,
  type EventKind,
} from "../common/contract/index.ts";
import { renderPayload } from "../deliverer/payload.ts";
import { deliveryHeaders } from "../deliverer/sign.ts";

const ChainId = t.String({ description: `CAIP-2 chain id: ${CHAIN_CHOICES}.`, examples: ["tron:mainnet"] });
const Address = t.String({ description: "Base58check TRON address (T..., 34 characters).", examples: ["TPcUx2iwjomVzmX3CHDDYmnEPJFTVeyqqS"] });
const Nullable = <T extends TSchema>(schema: T, description: string) => t.Union([schema, t.Null()], { description });

export const AssetSchema = t.Object(
  {
    type: t.Union([t.Literal("native"), t.Literal("fungible")], { description: "native is TRX; fungible is TRC-10 or TRC-20." }),
    standard: t.Union([t.Literal("TRX"), t.Literal("TRC10"), t.Literal("TRC20")]),
    contract: Nullable(t.String(), "The TRC-20 contract (T...); null for TRX and TRC-10."),
    tokenId: Nullable(t.String(), "The TRC-10 token id; null otherwise."),
    symbol: Nullable(t.String(), "TRX, or the symbol of a well-known token on this chain; null when unknown."),
    decimals: Nullable(t.Integer(), "6 for TRX, or the decimals of a well-known token; null when unknown."),
  },
  { title: "Asset" },
);

export const MatchedAddressSchema = t.Object(
  {
    chainId: ChainId,
    address: Address,
    role: t.Union([t.Literal("from"), t.Literal("to")], { description: "A transfer from a watched address to itself lists both roles." }),
  },
  { title: "MatchedAddress" },
);

/** The fields every transfer kind carries: the transfer, where it was seen, and which watched addresses it touched. */
const transferFields = {
  chainId: ChainId,
  blockNumber: t.Integer({ description: "The block the transfer is in (for failed/dropped: the block a fork replaced)." }),
  blockHash: t.String({ description: "That block's id, 64 hex characters." }),
  blockTimestamp: t.Integer({ description: "That block's time, milliseconds since the Unix epoch." }),
  txId: t.String({ description: "The transaction id, 64 hex characters." }),
  logIndex: t.Integer({
    description: "0-based position of the TRC-20 Transfer log in the transaction's log array; -1 for TRX, TRC-10, internal and failed transfers.",
  }),
  from: Address,
  to: Address,
  amount: t.String({ description: "Decimal string in the asset's base units (sun for TRX).", examples: ["6868769"] }),
  asset: AssetSchema,
  matchedAddresses: t.Array(MatchedAddressSchema, { description: "The watched addresses this transfer touched, with their role." }),
  internalIndex: t.Integer({
    description: "0-based position in the transaction info's internal_transactions for a transfer made by a contract; -1 otherwise.",
  }),
  fee: t.String({ description: "The transaction's fee in sun, as a decimal string; \"0\" when none." }),
  memo: Nullable(t.String(), "The transaction's memo (raw_data.data) as UTF-8 text, \"0x...\" hex when it is not valid UTF-8, or null."),
  backfill: Nullable(
    t.String(),
    "The backfill job (bf_...) that made this event from a past block (POST /v1/subscriptions/{id}/backfills); null on every event of the live streams.",
  ),
  test: t.Optional(t.Literal(true, { description: "Present (true) only on samples sent by POST /v1/subscriptions/{id}/test." })),
};

const solidifiedBlockNumber = t.Integer({ description: "The solidified head when the event was made." });

export const BroadcastedDataSchema = t.Object(transferFields, { title: "TransferBroadcastedData" });
export const ConfirmedDataSchema = t.Object({ ...transferFields, solidifiedBlockNumber }, { title: "TransferConfirmedData" });
export const FailedDataSchema = t.Object(
  {
    ...transferFields,
    reason: t.String({
      description: "java-tron's contractRet verbatim (REVERT, OUT_OF_ENERGY, ...) for a failed transaction; dropped for one a fork removed that never came back.",
      examples: ["REVERT"],
    }),
    solidifiedBlockNumber,
  },
  { title: "TransferFailedData" },
);
export const PingDataSchema = t.Object({ message: t.String() }, { title: "PingData" });

// ---- account activity (docs/CONTRACT.md "Account activity") ----

const literals = <T extends string>(values: readonly T[], description?: string) =>
  t.Union(values.map((v) => t.Literal(v)), description ? { description } : {});

/** The watched addresses an activity touched, with the roles its family knows. */
const activityMatched = (roles: readonly string[], what: string) =>
  t.Array(
    t.Object({ chainId: ChainId, address: Address, role: literals(roles) }, { title: `${what}MatchedAddress` }),
    { description: "The watched addresses this activity touched, with their role; one address may play two." },
  );

/** Where an activity happened, as for a transfer; then its family's fields; then what every activity carries. */
const activityPlace = {
  chainId: ChainId,
  blockNumber: t.Integer({ description: "The block the activity is in." }),
  blockHash: transferFields.blockHash,
  blockTimestamp: transferFields.blockTimestamp,
  txId: transferFields.txId,
  logIndex: t.Integer({
    description: "0-based position of the log in the transaction's log array (approvals, blacklist events); -1 for a contract (permissions, resources).",
  }),
};
const activityTail = {
  fee: transferFields.fee,
  backfill: transferFields.backfill,
  test: transferFields.test,
};

const Amount = t.String({ description: "Decimal string in the token's base units.", examples: ["1000000"] });

const approvalFields = {
  ...activityPlace,
  owner: t.String({ description: "The token holder who granted the allowance (base58check)." }),
  spender: t.String({ description: "The address allowed to move the owner's tokens (base58check): a router, an exchange, or a phishing contract." }),
  amount: t.String({ description: "The allowance, a decimal string in the token's base units; \"0\" revokes an earlier approval." }),
  unlimited: t.Boolean({ description: "true when amount is at least 2^255 (wallets grant 2^256-1 for \"unlimited\")." }),
  asset: AssetSchema,
  matchedAddresses: activityMatched(["owner", "spender"], "Approval"),
  ...activityTail,
};

const PermissionKeySchema = t.Object({ address: Address, weight: t.Integer({ description: "The key's weight toward the threshold." }) }, { title: "PermissionKey" });
const PermissionSchema = t.Object(
  {
    threshold: t.Integer({ description: "The weight of signatures a transaction needs." }),
    keys: t.Array(PermissionKeySchema, { description: "The keys that may sign, with their weights." }),
  },
  { title: "Permission" },
);
const ActivePermissionSchema = t.Object(
  {
    name: t.String({ description: "The active permission's name (permission_name)." }),
    threshold: PermissionSchema.properties.threshold,
    operations: t.String({ description: "The contract types it may sign: java-tron's 32-byte operations bitmap, 64 hex characters." }),
    keys: PermissionSchema.properties.keys,
  },
  { title: "ActivePermission" },
);

const permissionFields = {
  ...activityPlace,
  address: t.String({ description: "The account whose permissions changed (the contract's owner_address)." }),
  owner: PermissionSchema,
  witness: Nullable(PermissionSchema, "The witness permission the transaction sets, or null (accounts that are not super representatives)."),
  actives: t.Array(ActivePermissionSchema, { description: "The active permissions the transaction sets." }),
  matchedAddresses: activityMatched(["owner"], "Permission"),
  ...activityTail,
};

const resourceFields = {
  ...activityPlace,
  type: literals(RESOURCE_MOVE_TYPES, "freeze (FreezeBalanceV2), unfreeze (UnfreezeBalanceV2), withdraw_unfrozen (WithdrawExpireUnfreeze), cancel_unfreeze (CancelAllUnfreezeV2), delegate (DelegateResource), undelegate (UnDelegateResource), vote (VoteWitness), withdraw_rewards (WithdrawBalance)."),
  owner: t.String({
    description:
      "The account whose resources moved (the contract's owner_address, base58check): the staker, delegator, voter or withdrawer. " +
      "Present whichever side is watched (matchedAddresses names only the watched addresses).",
  }),
  resource: Nullable(literals(RESOURCE_NAMES), "The resource frozen, unfrozen or delegated; null where the contract names none."),
  amount: Nullable(t.String(), "Sun, as a decimal string: the balance frozen, unfrozen or delegated; for the withdrawals the amount the transaction info reports; null for votes."),
  receiver: Nullable(Address, "delegate and undelegate: the account the resource goes to or comes back from; null otherwise."),
  lock: Nullable(t.Boolean(), "delegate: whether the delegation is locked; null otherwise."),
  lockPeriod: Nullable(t.Integer(), "delegate: the lock in blocks (0 when none); null otherwise."),
  votes: Nullable(
    t.Array(t.Object({ address: Address, count: t.Integer({ description: "Votes for that witness." }) }, { title: "Vote" })),
    "vote: the votes the transaction sets (they replace the account's earlier ones); null otherwise.",
  ),
  matchedAddresses: activityMatched(["owner", "receiver"], "Resource"),
  ...activityTail,
};

const blacklistFields = {
  ...activityPlace,
  type: literals(BLACKLIST_TYPES, "added (AddedBlackList), removed (RemovedBlackList), funds_destroyed (DestroyedBlackFunds)."),
  address: t.String({ description: "The user the issuer froze, unfroze or whose balance it destroyed (base58check)." }),
  amount: Nullable(Amount, "funds_destroyed: the balance destroyed, in the token's base units; null otherwise."),
  asset: AssetSchema,
  matchedAddresses: activityMatched(["blacklisted"], "Blacklist"),
  ...activityTail,
};

/** A family's two data schemas: .broadcasted, and .confirmed with the solidified head. */
function activitySchemas<F extends Record<string, TSchema>>(name: string, fields: F) {
  return {
    broadcasted: t.Object(fields, { title: `${name}BroadcastedData` }),
    confirmed: t.Object({ ...fields, solidifiedBlockNumber }, { title: `${name}ConfirmedData` }),
  };
}

export const ApprovalDataSchemas = activitySchemas("Approval", approvalFields);
export const PermissionDataSchemas = activitySchemas("Permission", permissionFields);
export const ResourceDataSchemas = activitySchemas("Resource", resourceFields);
export const BlacklistDataSchemas = activitySchemas("Blacklist", blacklistFields);

/** Each activity kind's data schema. */
export const ACTIVITY_DATA_SCHEMAS: Record<ActivityKind, TSchema> = {
  "wallet.approval.broadcasted": ApprovalDataSchemas.broadcasted,
  "wallet.approval.confirmed": ApprovalDataSchemas.confirmed,
  "wallet.permission.broadcasted": PermissionDataSchemas.broadcasted,
  "wallet.permission.confirmed": PermissionDataSchemas.confirmed,
  "wallet.resource.broadcasted": ResourceDataSchemas.broadcasted,
  "wallet.resource.confirmed": ResourceDataSchemas.confirmed,
  "wallet.blacklist.broadcasted": BlacklistDataSchemas.broadcasted,
  "wallet.blacklist.confirmed": BlacklistDataSchemas.confirmed,
};

export type BroadcastedData = Static<typeof BroadcastedDataSchema>;
export type ConfirmedData = Static<typeof ConfirmedDataSchema>;
export type FailedData = Static<typeof FailedDataSchema>;
export type PingData = Static<typeof PingDataSchema>;
export type ApprovalData = Static<typeof ApprovalDataSchemas.broadcasted>;
export type ApprovalConfirmedData = Static<typeof ApprovalDataSchemas.confirmed>;
export type PermissionData = Static<typeof PermissionDataSchemas.broadcasted>;
export type PermissionConfirmedData = Static<typeof PermissionDataSchemas.confirmed>;
export type ResourceData = Static<typeof ResourceDataSchemas.broadcasted>;
export type ResourceConfirmedData = Static<typeof ResourceDataSchemas.confirmed>;
export type BlacklistData = Static<typeof BlacklistDataSchemas.broadcasted>;
export type BlacklistConfirmedData = Static<typeof BlacklistDataSchemas.confirmed>;

export interface Envelope<D> {
  id: string;
  kind: EventKind;
  date: string;
  subscriptionId: string;
  data: D;
}

// The examples are real mainnet transactions: one USDT payment of 6.868769 from TPcUx2iw... that failed four times
// with REVERT and once with OUT_OF_ENERGY in block 50,568,556 before it went through in the same block (tx ids, fees,
// addresses, amounts and block time as recorded). That block was not recorded, so its hash is made up after the
// 8-byte block number that starts every TRON block id.
const BLOCK = {
  chainId: "tron:mainnet",
  blockNumber: 50568556,
  blockHash: "0000000003039d6c5a4f1e9b7c2d8e3f60a1b2c3d4e5f6071829304a5b6c7d8e",
  blockTimestamp: 1682319087000,
};
const USDT = { type: "fungible", standard: "TRC20", contract: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", tokenId: null, symbol: "USDT", decimals: 6 } as const;
const PAYER = "TPcUx2iwjomVzmX3CHDDYmnEPJFTVeyqqS";
const PAYEE = "TXCvUayMx6AuBvS7qBa79ZAfhrwSA7vTjG";
const SUBSCRIPTION_ID = "sub_01JDX4Q3ZK7M2N8P5R6S9T0V1W";

const payment = {
  ...BLOCK,
  txId: "b9ddf01476960571422ad5b62da29f4100aad44a295307b0c3ea728dacc3fdcb",
  logIndex: 0,
  from: PAYER,
  to: PAYEE,
  amount: "6868769",
  asset: USDT,
  matchedAddresses: [{ chainId: "tron:mainnet", address: PAYEE, role: "to" as const }],
  internalIndex: -1,
  fee: "13395900",
  memo: null,
  backfill: null,
};

// Account activity. The delegation is a real one of recorded mainnet block 61,132,092 (fixtures/tron/): an energy
// rental provider lending 5,126 TRX's energy for a day; its transaction info was not recorded, so its fee is what a
// delegation costs an account with staked bandwidth. The others are shaped like real ones around the payment above,
// with made-up transaction ids and block hashes: the payer granting SunSwap's V2 router an unlimited USDT allowance
// just before paying, then making its account a 2-of-2 multi-signature one (100 TRX, the chain's fee), and USDT's
// issuer blacklisting the payee.
const ROUTER = "TKzxdSv2FZKQrEqkKVgp5DcwEXBEKMg2Ax";
const MAX_UINT256 = "115792089237316195423570985008687907853269984665640564039457584007913129639935";
const approval = {
  ...BLOCK,
  txId: "734feff0c641e66dffb22e68b766c6a2c1a15d5591e20bba24ef1305bddbe938",
  logIndex: 0,
  owner: PAYER,
  spender: ROUTER,
  amount: MAX_UINT256,
  unlimited: true,
  asset: USDT,
  matchedAddresses: [{ chainId: "tron:mainnet", address: PAYER, role: "owner" as const }],
  fee: "4841560",
  backfill: null,
};
const multisig = [{ address: PAYER, weight: 1 }, { address: PAYEE, weight: 1 }];
const permission = {
  chainId: "tron:mainnet",
  blockNumber: 50568561,
  blockHash: "0000000003039d7178636d0ed19cfea2c523dbe0a020c894ba553690a4d0ac64",
  blockTimestamp: 1682319102000,
  txId: "1b7607a4fd1230ef9c067b58e9ca712adf788ee0691aa1740d1d228a3fe70b2f",
  logIndex: -1,
  address: PAYER,
  owner: { threshold: 2, keys: multisig },
  witness: null,
  actives: [{ name: "active", threshold: 2, operations: "7fff1fc0033e0000000000000000000000000000000000000000000000000000", keys: multisig }],
  matchedAddresses: [{ chainId: "tron:mainnet", address: PAYER, role: "owner" as const }],
  fee: "100000000",
  backfill: null,
};
const delegation = {
  chainId: "tron:mainnet",
  blockNumber: 61132092,
  blockHash: "0000000003a4cd3c93b053942998eb1c7ee381b735c210ec59830aaa163e9f7f",
  blockTimestamp: 1714038858000,
  txId: "07f62308365d25e3c24681f9f285cb9a4d0922a887a2b624ed779e37d685365e",
  logIndex: -1,
  type: "delegate" as const,
  owner: "TGsoR5dSDkRRU9tUPb3STBB7RFh77RTED4",
  resource: "ENERGY" as const,
  amount: "5126000000",
  receiver: "TLpwX5ZEh4mHYMH98nrAt51TzrbeTnbmw4",
  lock: true,
  lockPeriod: 28800,
  votes: null,
  matchedAddresses: [{ chainId: "tron:mainnet", address: "TGsoR5dSDkRRU9tUPb3STBB7RFh77RTED4", role: "owner" as const }],
  fee: "0",
  backfill: null,
};
const blacklisting = {
  chainId: "tron:mainnet",
  blockNumber: 50568600,
  blockHash: "0000000003039d980e13987afd425398951b57ba5c55a84c305c9c35811908a8",
  blockTimestamp: 1682319219000,
  txId: "2770339942df58e9563524b74e93d3e048faf6aac16ab041924b5e54be26974b",
  logIndex: 0,
  type: "added" as const,
  address: PAYEE,
  amount: null,
  asset: USDT,
  matchedAddresses: [{ chainId: "tron:mainnet", address: PAYEE, role: "blacklisted" as const }],
  fee: "0",
  backfill: null,
};

export const EXAMPLE_PAYLOADS: {
  "wallet.transfer.broadcasted": Envelope<BroadcastedData>;
  "wallet.transfer.confirmed": Envelope<ConfirmedData>;
  "wallet.transfer.failed": Envelope<FailedData>;
  "wallet.approval.broadcasted": Envelope<ApprovalData>;
  "wallet.approval.confirmed": Envelope<ApprovalConfirmedData>;
  "wallet.permission.broadcasted": Envelope<PermissionData>;
  "wallet.permission.confirmed": Envelope<PermissionConfirmedData>;
  "wallet.resource.broadcasted": Envelope<ResourceData>;
  "wallet.resource.confirmed": Envelope<ResourceConfirmedData>;
  "wallet.blacklist.broadcasted": Envelope<BlacklistData>;
  "wallet.blacklist.confirmed": Envelope<BlacklistConfirmedData>;
  "service.ping": Envelope<PingData>;
} = {
  "wallet.transfer.broadcasted": {
    id: "evt_01JDX4R8B2C3D4E5F6G7H8J9KA",
    kind: "wallet.transfer.broadcasted",
    date: "2023-04-24T06:51:27.412Z",
    subscriptionId: SUBSCRIPTION_ID,
    data: payment,
  },
  "wallet.transfer.confirmed": {
    id: "evt_01JDX4T1M2N3P4Q5R6S7T8V9WX",
    kind: "wallet.transfer.confirmed",
    date: "2023-04-24T06:52:24.387Z",
    subscriptionId: SUBSCRIPTION_ID,
    data: { ...payment, solidifiedBlockNumber: 50568575 },
  },
  "wallet.transfer.failed": {
    id: "evt_01JDX4T1M2N3P4Q5R6S7T8V9WY",
    kind: "wallet.transfer.failed",
    date: "2023-04-24T06:52:24.391Z",
    subscriptionId: SUBSCRIPTION_ID,
    data: {
      ...payment,
      txId: "6f73eebee92e96fce4bb02098d3af588a14c86aeadd795477e9164c5177d87d6",
      logIndex: -1,
      fee: "2086320",
      reason: "REVERT",
      solidifiedBlockNumber: 50568575,
    },
  },
  "wallet.approval.broadcasted": {
    id: "evt_01GYS0G5S6C8HQRWJJE8CPZZYG",
    kind: "wallet.approval.broadcasted",
    date: "2023-04-24T06:51:27.398Z",
    subscriptionId: SUBSCRIPTION_ID,
    data: approval,
  },
  "wallet.approval.confirmed": {
    id: "evt_01GYS0HXDMNG0VXSJXPS0VBXE9",
    kind: "wallet.approval.confirmed",
    date: "2023-04-24T06:52:24.372Z",
    subscriptionId: SUBSCRIPTION_ID,
    data: { ...approval, solidifiedBlockNumber: 50568575 },
  },
  "wallet.permission.broadcasted": {
    id: "evt_01GYS0GMHNRRVZRMCCEBB4MTGM",
    kind: "wallet.permission.broadcasted",
    date: "2023-04-24T06:51:42.517Z",
    subscriptionId: SUBSCRIPTION_ID,
    data: permission,
  },
  "wallet.permission.confirmed": {
    id: "evt_01GYS0JC60QX43DJ8J90CRN9CY",
    kind: "wallet.permission.confirmed",
    date: "2023-04-24T06:52:39.488Z",
    subscriptionId: SUBSCRIPTION_ID,
    data: { ...permission, solidifiedBlockNumber: 50568580 },
  },
  "wallet.resource.broadcasted": {
    id: "evt_01HWAATSE4M8NFERS5526RTVCQ",
    kind: "wallet.resource.broadcasted",
    date: "2024-04-25T09:54:19.204Z",
    subscriptionId: SUBSCRIPTION_ID,
    data: delegation,
  },
  "wallet.resource.confirmed": {
    id: "evt_01HWAAWHG3C4CRW3F4VDGYCHR2",
    kind: "wallet.resource.confirmed",
    date: "2024-04-25T09:55:16.611Z",
    subscriptionId: SUBSCRIPTION_ID,
    data: { ...delegation, solidifiedBlockNumber: 61132111 },
  },
  "wallet.blacklist.broadcasted": {
    id: "evt_01GYS0M708A7MGNHCM901AHQZX",
    kind: "wallet.blacklist.broadcasted",
    date: "2023-04-24T06:53:39.720Z",
    subscriptionId: SUBSCRIPTION_ID,
    data: blacklisting,
  },
  "wallet.blacklist.confirmed": {
    id: "evt_01GYS0NYKFB05ZRBM4JZYWEEHD",
    kind: "wallet.blacklist.confirmed",
    date: "2023-04-24T06:54:36.655Z",
    subscriptionId: SUBSCRIPTION_ID,
    data: { ...blacklisting, solidifiedBlockNumber: 50568619 },
  },
  "service.ping": {
    id: "evt_01JDX4V0A1B2C3D4E5F6G7H8J9",
    kind: "service.ping",
    date: "2026-11-24T03:30:00.000Z",
    subscriptionId: SUBSCRIPTION_ID,
    data: { message: "This is a test event from the TRON webhook service." },
  },
};

/** When each kind fires and what a receiver may rely on; the OpenAPI document and README say the same. */
export const EVENT_DESCRIPTIONS: Record<EventKind, { summary: string; when: string }> = {
  "wallet.transfer.broadcasted": {
    summary: "A transfer appeared in a new block (fast, provisional)",
    when:
      "A successful TRX, TRC-10 or TRC-20 transfer touching a watched address appears in a new block at the chain's head, " +
      "seconds after it was made. Provisional: a fork above the solidified head may still replace the block; the transfer " +
      "then ends as confirmed (re-included) or failed with reason dropped.",
  },
  "wallet.transfer.confirmed": {
    summary: "A transfer's block is solidified (final)",
    when:
      "The block holding a successful transfer is at or below the node's solidified head on the canonical chain (about a " +
      "minute after broadcasted on mainnet). Final: credit a deposit on this event. A subscription listing only this kind " +
      "gets it without broadcasted.",
  },
  "wallet.transfer.failed": {
    summary: "A transfer failed for good (final)",
    when:
      "The transaction is in a solidified block with a result other than SUCCESS (reason = java-tron's contractRet: REVERT, " +
      "OUT_OF_ENERGY, ...; from, to and amount are what it would have moved), or it was broadcasted in a block that a fork " +
      "replaced and the solidified chain passed its expiration without including it (reason dropped; blockNumber and " +
      "blockHash are the replaced block's). Final.",
  },
  "wallet.approval.broadcasted": {
    summary: "A token approval appeared in a new block (provisional)",
    when:
      "A TRC-20 Approval(owner, spender, value) log of any contract, where the owner or the spender is watched, appears in a " +
      "new block at the head (successful transactions only). An approval of 0 (a revocation) is delivered too; unlimited is " +
      "true from 2^255. Provisional: a broadcasted activity whose block a fork replaced and that never reached the " +
      "solidified chain gets no final event.",
  },
  "wallet.approval.confirmed": {
    summary: "A token approval's block is solidified (final)",
    when: "The block holding an approval (as for wallet.approval.broadcasted) is solidified on the canonical chain. Final.",
  },
  "wallet.permission.broadcasted": {
    summary: "An account's permissions were rewritten (provisional)",
    when:
      "An AccountPermissionUpdateContract of a watched account appears in a new block at the head: the owner, witness and " +
      "active permissions as the transaction sets them (who may sign for the account from now on). Provisional, as for " +
      "the other activity kinds.",
  },
  "wallet.permission.confirmed": {
    summary: "A permission update's block is solidified (final)",
    when: "The block holding a permission update (as for wallet.permission.broadcasted) is solidified on the canonical chain. Final.",
  },
  "wallet.resource.broadcasted": {
    summary: "A Stake 2.0 resource move, vote or reward withdrawal appeared in a new block (provisional)",
    when:
      "A freeze, unfreeze, withdrawal of unfrozen TRX, cancellation of unfreezes, delegation, undelegation, vote or reward " +
      "withdrawal whose owner or receiver is watched appears in a new block at the head. Provisional, as for the other " +
      "activity kinds.",
  },
  "wallet.resource.confirmed": {
    summary: "A resource move's block is solidified (final)",
    when: "The block holding a resource move (as for wallet.resource.broadcasted) is solidified on the canonical chain. Final.",
  },
  "wallet.blacklist.broadcasted": {
    summary: "A stablecoin issuer froze, unfroze or wiped a watched address (provisional)",
    when:
      "An AddedBlackList, RemovedBlackList or DestroyedBlackFunds log of a contract in the operator's BLACKLIST_CONTRACTS " +
      "(USDT on mainnet by default), about a watched address, appears in a new block at the head. Provisional, as for " +
      "the other activity kinds.",
  },
  "wallet.blacklist.confirmed": {
    summary: "A blacklist event's block is solidified (final)",
    when: "The block holding a blacklist event (as for wallet.blacklist.broadcasted) is solidified on the canonical chain. Final.",
  },
  "service.ping": {
    summary: "A test event",
    when: "Sent by POST /v1/subscriptions/{id}/test (its default kind), whatever the subscription's events and addresses.",
  },
};

export const GUARANTEES =
  "Finality: broadcasted is provisional; confirmed and failed are final and never contradict each other (a transfer " +
  "gets at most one of them). Account activity (approval, permission, resource, blacklist) has broadcasted and " +
  "confirmed only: a broadcasted activity a fork dropped gets no final event. Ordering: none. Deliveries are " +
  "independent and retried on their own schedule, so a receiver may see confirmed before broadcasted. Identity: a " +
  "transfer is (chainId, txId, logIndex, internalIndex), an activity (chainId, txId, logIndex) within its family, and " +
  "there is one event per (subscription, kind, identity): re-reading a block, a restart or a fork never makes a " +
  "second one. Delivery is at least once: deduplicate deliveries on the webhook-id header (the event id, the same on " +
  "every attempt), and per transfer or activity on the identity tuple together with the kind.";

/** A secret of the documentation only (whsec_ + base64 of 32 bytes), so anyone can check the example signatures. */
export const EXAMPLE_SECRET = "whsec_d9RxGn+p46iOrU1z8mbCHLmXuJQDV4G813GZQPE3iAA=";
const EXAMPLE_SENT_AT = new Date(EXAMPLE_PAYLOADS["wallet.transfer.confirmed"].date);

/** The delivery headers and what a receiver does with each (the deliverer sets them: deliverer/sign.ts). */
export const DELIVERY_HEADERS: Record<string, string> = {
  "webhook-id": "The event id (evt_...), the same on every attempt and retry of this event: deduplicate on it.",
  "webhook-timestamp":
    "Unix seconds when this attempt was signed. Reject a delivery whose timestamp is far from now (standardwebhooks allows 5 minutes).",
  "webhook-signature":
    "Standard Webhooks signature: v1,<base64 HMAC-SHA256 of \"<webhook-id>.<webhook-timestamp>.<body>\"> keyed with the " +
    "subscription's secret (the base64 after whsec_). During a secret rotation's grace period two signatures, " +
    "space-separated, new first: accept the delivery when any one verifies.",
  "x-subscription-id": "The subscription (sub_...) this delivery belongs to.",
  "user-agent": "Identifies the sender.",
};

/** An example delivery of `kind` exactly as the deliverer would send it, signed with EXAMPLE_SECRET. */
export function exampleDelivery(kind: EventKind): { headers: Record<string, string>; body: string } {
  const payload = EXAMPLE_PAYLOADS[kind];
  const body = renderPayload(payload);
  const headers = deliveryHeaders({
    eventId: payload.id,
    subscriptionId: payload.subscriptionId,
    secrets: [EXAMPLE_SECRET],
    body,
    at: EXAMPLE_SENT_AT,
  });
  return { headers, body };
}

/**
 * How a receiver verifies a delivery, in TypeScript with the standardwebhooks package (the README shows the same).
 * `verify` throws unless a signature matches and the timestamp is within 5 minutes; it returns the parsed payload.
 */
export const VERIFY_EXAMPLE = `import { Webhook } from "standardwebhooks";
const webhook = new Webhook(process.env.WEBHOOK_SECRET!); // whsec_... from the create or rotate response

export async function receive(req: Request): Promise<Response> {
  const body = await req.text(); // the raw bytes: parsing and re-serializing first would break the signature
  try { webhook.verify(body, Object.fromEntries(req.headers)); } catch { return new Response("bad signature", { status: 401 }); }
  const event = JSON.parse(body) as { id: string; kind: string }; // deduplicate on event.id (the webhook-id)
  console.log(event.kind, event.id);
  return new Response(null, { status: 204 });
}`;
