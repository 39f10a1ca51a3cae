// Stake 2.0, votes and reward withdrawals. The recorded mainnet blocks are the oracle for delegation and freezing:
// each transaction's fields are read back from its signed raw_data_hex by tronweb's protobuf deserializer, and the
// addresses converted by tronweb, independently of the decoder. The other contracts are built by hand in both forms.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { decodeActivities } from "../../../../matcher/activity/decode.ts";
import type { DecodedActivity } from "../../../../matcher/activity/types.ts";
import type { TronBlock, TronTransaction } from "../../../../common/tron-node/types.ts";
import { FORMS, TronWeb, address, block, info, printed, tx, utils } from "../../../support/tron-json.ts";

const FIXTURES = join(import.meta.dir, "../../../../fixtures/tron");
const load = (name: string): TronBlock => JSON.parse(readFileSync(join(FIXTURES, name), "utf8")) as TronBlock;
const opts = { chainId: "tron:mainnet" as const, blacklistContracts: new Set<string>() };

const RECORDED = ["DelegateResourceContract", "UnDelegateResourceContract", "FreezeBalanceV2Contract"];

interface Signed {
  owner_address: string;
  receiver_address?: string;
  balance?: number;
  frozen_balance?: number;
  resource: string;
  lock?: boolean;
  lock_period?: number;
}

/** The contract as signed: tronweb's protobuf reading of raw_data_hex. */
function signed(t: TronTransaction): Signed {
  const type = t.raw_data.contract[0]!.type;
  const decoded = utils.deserializeTx.deserializeTransaction(type as "DelegateResourceContract", t.raw_data_hex!);
  return decoded.contract[0]!.parameter.value as unknown as Signed;
}

function expected(t: TronTransaction): Omit<DecodedActivity, "detail"> & { detail: unknown } {
  const c = t.raw_data.contract[0]!;
  const s = signed(t);
  const owner = TronWeb.address.fromHex(s.owner_address);
  const resource = s.resource;
  if (c.type === "FreezeBalanceV2Contract") {
    return {
      family: "resource",
      txId: t.txID,
      logIndex: -1,
      parties: [{ address: owner, role: "owner" }],
      detail: { case: "resource", value: { type: "freeze", owner, resource, amount: String(s.frozen_balance) } },
      fee: "0",
      result: "SUCCESS",
    };
  }
  const receiver = TronWeb.address.fromHex(s.receiver_address!);
  const delegate = c.type === "DelegateResourceContract";
  return {
    family: "resource",
    txId: t.txID,
    logIndex: -1,
    parties: [
      { address: owner, role: "owner" },
      { address: receiver, role: "receiver" },
    ],
    detail: {
      case: "resource",
      value: {
        type: delegate ? "delegate" : "undelegate",
        owner,
        resource,
        amount: String(s.balance),
        receiver,
        ...(delegate ? { lock: s.lock ?? false, lockPeriod: BigInt(s.lock_period ?? 0) } : {}),
      },
    },
    fee: "0",
    result: "SUCCESS",
  };
}

describe("the recorded mainnet blocks (no transaction infos: fee 0)", () => {
  for (const [name, file, counts] of [
    ["61132092 (visible=false)", "mainnet-block-61132092.getblockbynum.json", { DelegateResourceContract: 20, UnDelegateResourceContract: 22 }],
    [
      "60836289 (visible=true)",
      "mainnet-block-60836289.getblockbynum.visible.json",
      { DelegateResourceContract: 6, UnDelegateResourceContract: 18, FreezeBalanceV2Contract: 2 },
    ],
  ] as const) {
    test(`block ${name}: every resource transaction, in block order, as signed`, () => {
      const recorded = load(file);
      const txs = recorded.transactions!.filter((t) => RECORDED.includes(t.raw_data.contract[0]!.type));
      const count = (type: string) => txs.filter((t) => t.raw_data.contract[0]!.type === type).length;
      for (const [type, n] of Object.entries(counts)) expect(count(type)).toBe(n);
      const activities = decodeActivities(recorded, null, opts);
      expect(activities.map((a) => a.txId)).toEqual(txs.map((t) => t.txID));
      for (let i = 0; i < txs.length; i++) expect(activities[i]).toEqual(expected(txs[i]!) as DecodedActivity);
    });
  }

  test("the JSON agrees with the signed bytes: an absent resource is BANDWIDTH (proto3 leaves the default out)", () => {
    const visible = load("mainnet-block-60836289.getblockbynum.visible.json");
    const bare = visible.transactions!.filter((t) => {
      const c = t.raw_data.contract[0]!;
      return RECORDED.includes(c.type) && c.parameter.value.resource === undefined;
    });
    expect(bare.length).toBe(2);
    for (const t of bare) {
      expect(signed(t).resource).toBe("BANDWIDTH");
      const [a] = decodeActivities(block([t]), null, opts);
      expect(a!.detail).toMatchObject({ value: { resource: "BANDWIDTH" } });
    }
    // The signed owner is the printed one, whichever the form.
    const hex = load("mainnet-block-61132092.getblockbynum.json").transactions!.find((t) => t.raw_data.contract[0]!.type === "DelegateResourceContract")!;
    expect(signed(hex).owner_address.toLowerCase()).toBe(hex.raw_data.contract[0]!.parameter.value.owner_address!);
  });
});

describe("built by hand, in both forms", () => {
  const owner = address(1);
  const receiver = address(2);
  for (const form of FORMS) {
    test(`${form}: freeze and unfreeze pass ENERGY and TRON_POWER through; amounts beyond 2^53 as strings stay exact`, () => {
      const freeze = tx("FreezeBalanceV2Contract", { owner_address: printed(owner, form), frozen_balance: "90000000000000001", resource: "TRON_POWER" });
      const unfreeze = tx("UnfreezeBalanceV2Contract", { owner_address: printed(owner, form), unfreeze_balance: 5_000_000, resource: "ENERGY" });
      const unfreezeBandwidth = tx("UnfreezeBalanceV2Contract", { owner_address: printed(owner, form), unfreeze_balance: 1 });
      const infos = [info(freeze, { fee: 345_000 }), info(unfreeze), info(unfreezeBandwidth)];
      const [a, b, c, ...rest] = decodeActivities(block([freeze, unfreeze, unfreezeBandwidth]), infos, opts);
      expect(rest).toEqual([]);
      expect(a).toEqual({
        family: "resource",
        txId: freeze.txID,
        logIndex: -1,
        parties: [{ address: owner, role: "owner" }],
        detail: { case: "resource", value: { type: "freeze", owner, resource: "TRON_POWER", amount: "90000000000000001" } },
        fee: "345000",
        result: "SUCCESS",
      });
      expect(b!.detail).toEqual({ case: "resource", value: { type: "unfreeze", owner, resource: "ENERGY", amount: "5000000" } });
      expect(b!.fee).toBe("0");
      expect(c!.detail).toEqual({ case: "resource", value: { type: "unfreeze", owner, resource: "BANDWIDTH", amount: "1" } });
    });

    test(`${form}: a delegation without lock fields is unlocked with period 0; an undelegation has no lock`, () => {
      const delegate = tx("DelegateResourceContract", { owner_address: printed(owner, form), receiver_address: printed(receiver, form), balance: 7 });
      const undelegate = tx("UnDelegateResourceContract", {
        owner_address: printed(owner, form),
        receiver_address: printed(receiver, form),
        balance: 7,
        resource: "ENERGY",
      });
      const [d, u] = decodeActivities(block([delegate, undelegate]), null, opts);
      expect(d!.detail).toEqual({ case: "resource", value: { type: "delegate", owner, resource: "BANDWIDTH", amount: "7", receiver, lock: false, lockPeriod: 0n } });
      expect(d!.parties).toEqual([
        { address: owner, role: "owner" },
        { address: receiver, role: "receiver" },
      ]);
      expect(u!.detail).toEqual({ case: "resource", value: { type: "undelegate", owner, resource: "ENERGY", amount: "7", receiver } });
    });

    test(`${form}: withdrawals take their amount from the transaction info`, () => {
      const unfrozen = tx("WithdrawExpireUnfreezeContract", { owner_address: printed(owner, form) });
      const rewards = tx("WithdrawBalanceContract", { owner_address: printed(owner, form) });
      const nothing = tx("WithdrawExpireUnfreezeContract", { owner_address: printed(owner, form) });
      const infos = [
        info(unfrozen, { withdraw_expire_amount: 12_345_678, fee: 1 }),
        info(rewards, { withdraw_amount: 42_000_000 }),
        info(nothing), // proto3 JSON leaves a zero out
      ];
      const [u, r, n] = decodeActivities(block([unfrozen, rewards, nothing]), infos, opts);
      expect(u).toMatchObject({ fee: "1", parties: [{ address: owner, role: "owner" }] });
      expect(u!.detail).toEqual({ case: "resource", value: { type: "withdraw_unfrozen", owner, amount: "12345678" } });
      expect(r!.detail).toEqual({ case: "resource", value: { type: "withdraw_rewards", owner, amount: "42000000" } });
      expect(n!.detail).toEqual({ case: "resource", value: { type: "withdraw_unfrozen", owner, amount: "0" } });
    });

    test(`${form}: a cancellation's amount is the sum of cancel_unfreezeV2_amount, in java-tron's [{key, value}] form or as a map`, () => {
      const listed = tx("CancelAllUnfreezeV2Contract", { owner_address: printed(owner, form) });
      const mapped = tx("CancelAllUnfreezeV2Contract", { owner_address: printed(owner, form) });
      const infos = [
        info(listed, {
          cancel_unfreezeV2_amount: [
            { key: "ENERGY", value: 10_000_000 },
            { key: "TRON_POWER", value: 0 },
            { key: "BANDWIDTH", value: 2_500_000 },
          ],
          withdraw_expire_amount: 99,
        }),
        info(mapped, { cancel_unfreezeV2_amount: { ENERGY: 3, BANDWIDTH: 4 } }),
      ];
      const [l, m] = decodeActivities(block([listed, mapped]), infos, opts);
      expect(l!.detail).toEqual({ case: "resource", value: { type: "cancel_unfreeze", owner, amount: "12500000" } });
      expect(m!.detail).toEqual({ case: "resource", value: { type: "cancel_unfreeze", owner, amount: "7" } });
    });

    test(`${form}: a vote lists its votes (base58, counts) and has no amount`, () => {
      const sr1 = address(10);
      const sr2 = address(11);
      const vote = tx("VoteWitnessContract", {
        owner_address: printed(owner, form),
        votes: [
          { vote_address: printed(sr1, form), vote_count: 1000 },
          { vote_address: printed(sr2, form), vote_count: 3 },
        ],
      });
      const [v, ...rest] = decodeActivities(block([vote]), [info(vote)], opts);
      expect(rest).toEqual([]);
      expect(v).toMatchObject({ parties: [{ address: owner, role: "owner" }], logIndex: -1 });
      expect(v!.detail).toEqual({
        case: "resource",
        value: {
          type: "vote",
          owner,
          votes: [
            { address: sr1, count: 1000n },
            { address: sr2, count: 3n },
          ],
        },
      });
    });
  }

  test("a malformed contract (owner missing, amount negative, receiver not an address) makes nothing", () => {
    const txs = [
      tx("FreezeBalanceV2Contract", { frozen_balance: 1 }),
      tx("FreezeBalanceV2Contract", { owner_address: owner, frozen_balance: -1 }),
      tx("DelegateResourceContract", { owner_address: owner, receiver_address: "nope", balance: 1 }),
    ];
    expect(decodeActivities(block(txs), null, opts)).toEqual([]);
  });

  test("a resource the contract does not list (a later java-tron's) makes nothing: the deliverer would refuse the block's events", () => {
    const txs = [
      tx("FreezeBalanceV2Contract", { owner_address: owner, frozen_balance: 1, resource: "STORAGE" }),
      tx("DelegateResourceContract", { owner_address: owner, receiver_address: owner, balance: 1, resource: 7 }),
    ];
    expect(decodeActivities(block(txs), null, opts)).toEqual([]);
  });
});
