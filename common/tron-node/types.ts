// The java-tron full-node HTTP API shapes the matcher reads (and tools/tron-sim serves). Only the fields we use are
// typed; everything else passes through untouched. Addresses are 21-byte hex ("41…") with visible=false and base58
// ("T…") with visible=true.

export interface TronContractValue {
  owner_address?: string;
  to_address?: string;
  /** A string when longer than 15 digits (see parseNodeJson). */
  amount?: number | string;
  asset_name?: string;
  contract_address?: string;
  data?: string;
  call_value?: number;
  [key: string]: unknown;
}

export interface TronContract {
  type: string;
  parameter: { value: TronContractValue; type_url: string };
  Permission_id?: number;
}

export interface TronTransaction {
  txID: string;
  ret?: { contractRet?: string; [key: string]: unknown }[];
  signature?: string[];
  raw_data: {
    contract: TronContract[];
    ref_block_bytes?: string;
    ref_block_hash?: string;
    expiration?: number;
    fee_limit?: number;
    timestamp?: number;
    /** The memo: hex of the bytes of raw_data field 10. */
    data?: string;
    [key: string]: unknown;
  };
  raw_data_hex?: string;
}

export interface TronBlockHeader {
  raw_data: {
    number: number;
    txTrieRoot?: string;
    witness_address?: string;
    parentHash: string;
    version?: number;
    timestamp: number;
  };
  witness_signature?: string;
}

export interface TronBlock {
  blockID: string;
  block_header: TronBlockHeader;
  /** Absent for a block without transactions. */
  transactions?: TronTransaction[];
}

export interface TronLog {
  /** Emitting contract: 20-byte hex without the 41 prefix (visible=false) or base58 (visible=true). */
  address: string;
  topics?: string[];
  data?: string;
}

export interface TronTransactionInfo {
  id: string;
  blockNumber?: number;
  blockTimeStamp?: number;
  contract_address?: string;
  contractResult?: string[];
  fee?: number;
  /** "FAILED" when the transaction failed; absent on success. */
  result?: string;
  resMessage?: string;
  receipt?: { result?: string; [key: string]: unknown };
  log?: TronLog[];
  internal_transactions?: TronInternalTransaction[];
  [key: string]: unknown;
}

/** One entry of a transaction info's internal_transactions (a call, transfer or create a contract made). */
export interface TronInternalTransaction {
  hash?: string;
  caller_address?: string;
  transferTo_address?: string;
  /** One per entry; `{}` when nothing moved; tokenId names a TRC-10 token (absent for TRX). */
  callValueInfo?: { callValue?: number | string; tokenId?: string }[];
  /** Hex of the kind: "call", "create", "suicide". */
  note?: string;
  /** True when the entry was rolled back (its call reverted). */
  rejected?: boolean;
  [key: string]: unknown;
}

/** A block-shaped object: java-tron answers `{}` for a block it does not have. */
export function isBlock(value: unknown): value is TronBlock {
  const v = value as Partial<TronBlock> | null;
  return (
    typeof v === "object" &&
    v !== null &&
    typeof v.blockID === "string" &&
    typeof v.block_header?.raw_data?.number === "number"
  );
}
