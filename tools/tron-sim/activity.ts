// Account activity as java-tron puts it in a block and a transaction info (issue 33): TRC-20 approvals, account
// permission updates, Stake 2.0 resource contracts, votes, reward withdrawals and USDT's blacklist events.
// Contract values are in java-tron's hex form and key order. java-tron prints a block's contracts through fastjson,
// whose HashMap orders keys by their hash (the recorded blocks show it: DelegateResourceContract is `balance,
// resource, receiver_address, lock, owner_address, lock_period`), and proto3 defaults are left out (resource
// BANDWIDTH, lock false, lock_period 0, a Permission's type Owner and id 0). Logs and calldata are ABI-encoded by
// ethers through tronweb; what the transaction cannot say (a withdrawal's amount, a destroyed balance, a log's
// form) goes into the info as `InfoExtra`, kept by txID so a fork's re-included transaction keeps it.
import { createRequire } from "node:module";
import type { TronLog, TronTransaction, TronTransactionInfo } from "../../common/tron-node/types.ts";
import { USDT_HEX, baseRaw, contractEntry, finishTransaction, type RefBlock } from "./envelope.ts";
import { addressToHex } from "./forms.ts";

const { utils } = createRequire(import.meta.url)("tronweb") as typeof import("tronweb");
const { Interface } = utils.ethersUtils;

/** TRC-20's approve and Approval, and Tether's blacklist functions and events (USDT on TRON is Tether's code). */
const TOKEN = new Interface([
  "function approve(address _spender, uint256 _value) returns (bool)",
  "event Approval(address indexed owner, address indexed spender, uint256 value)",
  "function addBlackList(address _evilUser)",
  "function removeBlackList(address _clearedUser)",
  "function destroyBlackFunds(address _blackListedUser)",
  "event AddedBlackList(address _user)",
  "event RemovedBlackList(address _user)",
  "event DestroyedBlackFunds(address _blackListedUser, uint256 _balance)",
]);
/** The same events with the user indexed (a topic): other issuers' contracts declare them so; the topic0 is the same. */
const INDEXED_BLACKLIST = new Interface([
  "event AddedBlackList(address indexed _user)",
  "event RemovedBlackList(address indexed _user)",
  "event DestroyedBlackFunds(address indexed _blackListedUser, uint256 _balance)",
]);

export const RESOURCE_TYPES = [
  "freeze",
  "unfreeze",
  "withdraw_unfrozen",
  "cancel_unfreeze",
  "delegate",
  "undelegate",
  "vote",
  "withdraw_rewards",
] as const;
export const BLACKLIST_TYPES = ["blacklist_added", "blacklist_removed", "blacklist_funds_destroyed"] as const;
export const ACTIVITY_TYPES = ["approval", "permission", ...RESOURCE_TYPES, ...BLACKLIST_TYPES] as const;
export type ActivityType = (typeof ACTIVITY_TYPES)[number];

export type ResourceCode = "BANDWIDTH" | "ENERGY" | "TRON_POWER";
const RESOURCE_CODES: readonly ResourceCode[] = ["BANDWIDTH", "ENERGY", "TRON_POWER"];

/** The operations of the active permission an account gets by default (as /wallet/getaccount shows it). */
export const DEFAULT_OPERATIONS = "7fff1fc0033e0300000000000000000000000000000000000000000000000000";

/** One permission of an AccountPermissionUpdateContract. */
export interface PermissionSpec {
  /** permission_name; default "owner", "witness", "active". */
  name?: string;
  /** Default 1. */
  threshold?: number;
  /** weight default 1. */
  keys: { address: string; weight?: number }[];
  /** Actives: the 32-byte operations bitmap, hex (default DEFAULT_OPERATIONS). */
  operations?: string;
  /** Actives: the permission id (default 2, 3, … in order). */
  id?: number;
}

/**
 * An activity a test asks for (addresses in either form). `owner` signs every contract (its owner_address) and is
 * the Approval's owner; the blacklist calls are signed by `issuer`.
 */
export interface ActivitySpec {
  type: ActivityType;
  owner?: string;
  /** approval */
  spender?: string;
  /** delegate, undelegate */
  receiver?: string;
  /** blacklist_*: the user the issuer acts on. */
  user?: string;
  /** blacklist_*: the caller (default the first pool address). */
  issuer?: string;
  /**
   * Base units (decimal string or integer): approval's value (up to 2^256-1), the balance frozen, unfrozen or
   * (un)delegated, the amount a withdrawal reports in its info, the balance a blacklist_funds_destroyed destroyed.
   */
  amount?: string | number;
  /** ENERGY (default), BANDWIDTH, TRON_POWER. */
  resource?: ResourceCode;
  /** delegate: locked, and for how many blocks (lock_period). */
  lock?: boolean;
  lockPeriod?: number;
  /** vote */
  votes?: { address: string; count: number }[];
  /** permission: what the transaction sets (default: the owner alone, threshold 1, in owner and one active). */
  permissions?: { owner?: PermissionSpec; witness?: PermissionSpec; actives?: PermissionSpec[] };
  /** unfreeze, cancel_unfreeze: expired unfrozen TRX withdrawn on the way (info.withdraw_expire_amount). */
  withdrawn?: string | number;
  /** cancel_unfreeze: the amounts cancelled per resource (info.cancel_unfreezeV2_amount; default `amount` for `resource`). */
  cancelled?: Partial<Record<ResourceCode, string | number>>;
  /** approval, blacklist_*: the token contract (default mainnet USDT). */
  contract?: string;
  /** blacklist_*: the user as an indexed topic instead of in the data. */
  indexed?: boolean;
  /** approval, blacklist_* (calls): java-tron's contractRet; a failed call emits no log. */
  result?: string;
  /** The contract's Permission_id (a multi-signature permission signed it). */
  permissionId?: number;
}

/** Fields added to (or replacing) a synthesized transaction info, in java-tron's field order. */
export type InfoExtra = Partial<TronTransactionInfo>;

export interface BuiltActivity {
  tx: TronTransaction;
  extra?: InfoExtra;
  /** The log's index in the transaction (approval, blacklist); -1 for a contract; absent for a failed call. */
  logIndex?: number;
}

const strip0x = (hex: string) => (hex.startsWith("0x") ? hex.slice(2) : hex);
/** A hex TRON address ("41…") as ethers takes it ("0x" + 20 bytes). */
const evm = (hex41: string) => `0x${hex41.slice(2)}`;

function need<T>(value: T | undefined | null, what: string, type: string): T {
  if (value === undefined || value === null || value === "") throw new TypeError(`${type}: ${what} is required`);
  return value;
}

function sun(value: string | number | undefined, what: string, type: string): number {
  const n = Number(need(value, what, type));
  if (!Number.isSafeInteger(n) || n < 0) throw new TypeError(`${type}: ${what} must be a whole number of sun`);
  return n;
}

function resourceOf(spec: ActivitySpec): ResourceCode {
  const r = spec.resource ?? "ENERGY";
  if (!RESOURCE_CODES.includes(r)) throw new TypeError(`${spec.type}: resource must be one of ${RESOURCE_CODES.join(", ")}`);
  return r;
}

/** The spec with every address in hex form (the simulator stores the hex form). */
export function activitySpecToHex(spec: ActivitySpec): ActivitySpec {
  if (!ACTIVITY_TYPES.includes(spec.type)) throw new TypeError(`unknown activity type ${JSON.stringify(spec.type)}`);
  const hex = (a: string | undefined) => (a === undefined ? undefined : addressToHex(a));
  const permission = (p: PermissionSpec | undefined) =>
    p && { ...p, keys: need(p.keys, "keys", spec.type).map((k) => ({ ...k, address: addressToHex(k.address) })) };
  const out: ActivitySpec = { ...spec };
  for (const k of ["owner", "spender", "receiver", "user", "issuer", "contract"] as const) if (spec[k] !== undefined) out[k] = hex(spec[k]);
  if (spec.votes) out.votes = spec.votes.map((v) => ({ ...v, address: addressToHex(v.address) }));
  if (spec.permissions) {
    const { owner, witness, actives } = spec.permissions;
    out.permissions = {
      ...(owner ? { owner: permission(owner) } : {}),
      ...(witness ? { witness: permission(witness) } : {}),
      ...(actives ? { actives: actives.map((a) => permission(a)!) } : {}),
    };
  }
  return out;
}

/** A Permission as java-tron prints it inside a contract (fastjson's order: operations, keys, threshold, id, type, permission_name). */
function permissionJson(p: PermissionSpec, kind: "Owner" | "Witness" | "Active", id: number, defaultName: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (kind === "Active") out.operations = (p.operations ?? DEFAULT_OPERATIONS).toLowerCase();
  out.keys = p.keys.map((k) => ({ address: k.address, weight: k.weight ?? 1 }));
  out.threshold = p.threshold ?? 1;
  if (id !== 0) out.id = id;
  if (kind !== "Owner") out.type = kind;
  out.permission_name = p.name ?? defaultName;
  return out;
}

function permissionValue(owner: string, spec: ActivitySpec): Record<string, unknown> {
  const self: PermissionSpec = { keys: [{ address: owner, weight: 1 }] };
  const p = spec.permissions ?? {};
  // fastjson's order: owner, witness, owner_address, actives.
  const value: Record<string, unknown> = { owner: permissionJson(p.owner ?? self, "Owner", 0, "owner") };
  if (p.witness) value.witness = permissionJson(p.witness, "Witness", 1, "witness");
  value.owner_address = owner;
  value.actives = (p.actives ?? [self]).map((a, i) => permissionJson(a, "Active", a.id ?? 2 + i, "active"));
  return value;
}

/** `log` of an info: one entry emitted by `contract` (hex "41…"), in java-tron's hex form (address without 41). */
function logEntry(contract: string, encoded: { topics: readonly string[]; data: string }): TronLog {
  const log: TronLog = { address: contract.slice(2), topics: encoded.topics.map(strip0x) };
  const data = strip0x(encoded.data);
  // An empty bytes field is a proto3 default: java-tron leaves it out.
  if (data) log.data = data;
  return log;
}

function callTransaction(from: string, contract: string, data: string, spec: ActivitySpec, ref: RefBlock, timestamp: number, rand: () => number): TronTransaction {
  const value = { data: strip0x(data), owner_address: from, contract_address: contract };
  return finishTransaction(
    { contract: [contractEntry("TriggerSmartContract", value, spec.permissionId)], ...baseRaw(ref, timestamp), fee_limit: 100_000_000 },
    spec.result ?? "SUCCESS",
    rand,
  );
}

function systemTransaction(type: string, value: Record<string, unknown>, spec: ActivitySpec, ref: RefBlock, timestamp: number, rand: () => number): TronTransaction {
  return finishTransaction({ contract: [contractEntry(type, value, spec.permissionId)], ...baseRaw(ref, timestamp) }, "SUCCESS", rand);
}

/** java-tron prints cancel_unfreezeV2_amount (a map) as key/value entries, every resource listed (live 4.8.2 output). */
function cancelledEntries(spec: ActivitySpec): { key: ResourceCode; value: number }[] {
  const given = spec.cancelled ?? { [resourceOf(spec)]: sun(spec.amount, "amount (or cancelled)", spec.type) };
  return (["ENERGY", "TRON_POWER", "BANDWIDTH"] as const).map((key) => ({ key, value: Number(given[key] ?? 0) }));
}

/**
 * The transaction for an activity (hex-form spec, see activitySpecToHex), with what its info adds. Throws a
 * TypeError naming the field when the spec lacks one.
 */
export function activityTransaction(spec: ActivitySpec, ref: RefBlock, timestamp: number, rand: () => number): BuiltActivity {
  const t = spec.type;
  const ok = (spec.result ?? "SUCCESS") === "SUCCESS";
  switch (t) {
    case "approval": {
      const owner = need(spec.owner, "owner", t);
      const spender = need(spec.spender, "spender", t);
      const amount = BigInt(need(spec.amount, "amount", t));
      const contract = spec.contract ?? USDT_HEX;
      const tx = callTransaction(owner, contract, TOKEN.encodeFunctionData("approve", [evm(spender), amount]), spec, ref, timestamp, rand);
      if (!ok) return { tx };
      return { tx, extra: { log: [logEntry(contract, TOKEN.encodeEventLog("Approval", [evm(owner), evm(spender), amount]))] }, logIndex: 0 };
    }
    case "blacklist_added":
    case "blacklist_removed":
    case "blacklist_funds_destroyed": {
      const user = need(spec.user, "user", t);
      const issuer = need(spec.issuer, "issuer", t);
      const contract = spec.contract ?? USDT_HEX;
      const [fn, event] = t === "blacklist_added"
        ? ["addBlackList", "AddedBlackList"]
        : t === "blacklist_removed"
          ? ["removeBlackList", "RemovedBlackList"]
          : ["destroyBlackFunds", "DestroyedBlackFunds"];
      const tx = callTransaction(issuer, contract, TOKEN.encodeFunctionData(fn, [evm(user)]), spec, ref, timestamp, rand);
      if (!ok) return { tx };
      const args: unknown[] = t === "blacklist_funds_destroyed" ? [evm(user), BigInt(need(spec.amount, "amount", t))] : [evm(user)];
      const encoded = (spec.indexed ? INDEXED_BLACKLIST : TOKEN).encodeEventLog(event, args);
      // Tether's blacklist functions return nothing: an empty contractResult.
      return { tx, extra: { contractResult: [""], log: [logEntry(contract, encoded)] }, logIndex: 0 };
    }
    case "permission": {
      const owner = need(spec.owner, "owner", t);
      const tx = systemTransaction("AccountPermissionUpdateContract", permissionValue(owner, spec), spec, ref, timestamp, rand);
      // The update's 100 TRX (chain parameter UpdateAccountPermissionFee) is in the info's fee beside the bandwidth.
      return { tx, extra: { fee: 100_000_000 + 268_000 }, logIndex: -1 };
    }
    case "freeze":
    case "unfreeze": {
      const owner = need(spec.owner, "owner", t);
      const resource = resourceOf(spec);
      const amount = sun(spec.amount, "amount", t);
      const r = resource === "BANDWIDTH" ? {} : { resource };
      // fastjson's order: resource, frozen_balance, owner_address / resource, owner_address, unfreeze_balance.
      const value = t === "freeze" ? { ...r, frozen_balance: amount, owner_address: owner } : { ...r, owner_address: owner, unfreeze_balance: amount };
      const tx = systemTransaction(t === "freeze" ? "FreezeBalanceV2Contract" : "UnfreezeBalanceV2Contract", value, spec, ref, timestamp, rand);
      const withdrawn = spec.withdrawn === undefined ? 0 : sun(spec.withdrawn, "withdrawn", t);
      return { tx, ...(withdrawn > 0 ? { extra: { withdraw_expire_amount: withdrawn } } : {}), logIndex: -1 };
    }
    case "delegate":
    case "undelegate": {
      const owner = need(spec.owner, "owner", t);
      const receiver = need(spec.receiver, "receiver", t);
      const resource = resourceOf(spec);
      const value: Record<string, unknown> = { balance: sun(spec.amount, "amount", t) };
      if (resource !== "BANDWIDTH") value.resource = resource;
      value.receiver_address = receiver;
      if (t === "delegate" && spec.lock) value.lock = true;
      value.owner_address = owner;
      if (t === "delegate" && spec.lockPeriod) value.lock_period = spec.lockPeriod;
      const tx = systemTransaction(t === "delegate" ? "DelegateResourceContract" : "UnDelegateResourceContract", value, spec, ref, timestamp, rand);
      return { tx, logIndex: -1 };
    }
    case "withdraw_unfrozen":
    case "withdraw_rewards": {
      const owner = need(spec.owner, "owner", t);
      const amount = sun(spec.amount, "amount", t);
      const type = t === "withdraw_unfrozen" ? "WithdrawExpireUnfreezeContract" : "WithdrawBalanceContract";
      const tx = systemTransaction(type, { owner_address: owner }, spec, ref, timestamp, rand);
      const extra: InfoExtra = t === "withdraw_unfrozen" ? { withdraw_expire_amount: amount } : { withdraw_amount: amount };
      return { tx, extra, logIndex: -1 };
    }
    case "cancel_unfreeze": {
      const owner = need(spec.owner, "owner", t);
      const tx = systemTransaction("CancelAllUnfreezeV2Contract", { owner_address: owner }, spec, ref, timestamp, rand);
      const withdrawn = spec.withdrawn === undefined ? 0 : sun(spec.withdrawn, "withdrawn", t);
      const extra: InfoExtra = {};
      if (withdrawn > 0) extra.withdraw_expire_amount = withdrawn;
      extra.cancel_unfreezeV2_amount = cancelledEntries(spec);
      return { tx, extra, logIndex: -1 };
    }
    case "vote": {
      const owner = need(spec.owner, "owner", t);
      const votes = need(spec.votes, "votes", t).map((v) => ({ vote_address: v.address, vote_count: v.count }));
      const tx = systemTransaction("VoteWitnessContract", { owner_address: owner, votes }, spec, ref, timestamp, rand);
      return { tx, logIndex: -1 };
    }
  }
}

/** An AccountCreateContract (mainnet blocks carry a few): not an activity, part of the generated mix. */
export function accountCreateTransaction(owner: string, account: string, ref: RefBlock, timestamp: number, rand: () => number): TronTransaction {
  return finishTransaction(
    { contract: [contractEntry("AccountCreateContract", { owner_address: owner, account_address: account })], ...baseRaw(ref, timestamp) },
    "SUCCESS",
    rand,
  );
}
