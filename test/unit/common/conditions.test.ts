// matcher/conditions.ts: match conditions applied to one transfer, by example and by property (fast-check), and
// buildEvents (matcher/match.ts) making events only for the roles that pass.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { DEFAULT_MATCH, decodeMatch, defaultMatch, encodeMatch, type AssetCondition, type MatchConditions, type MatchDirection } from "../../../common/match-conditions.ts";
import type { Watcher } from "../../../common/watch-index/reader.ts";
import { passingRoles, rolePasses, type Role } from "../../../matcher/conditions.ts";
import type { DecodedTransfer } from "../../../matcher/decode.ts";
import { BROADCASTED } from "../../../common/contract/index.ts";
import { buildEvents } from "../../../matcher/match.ts";

const USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const OTHER_TOKEN = "TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8";
const ALICE = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW";
const BOB = "TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL";

function transfer(over: Partial<DecodedTransfer> = {}): DecodedTransfer {
  return {
    txId: "ab".repeat(32),
    logIndex: -1,
    internalIndex: -1,
    from: ALICE,
    to: BOB,
    amount: "1000000",
    standard: "TRX",
    contract: null,
    tokenId: null,
    fee: "0",
    memo: null,
    result: "SUCCESS",
    expirationMs: 0,
    ...over,
  };
}

const trc20 = (amount: string, contract = USDT) => transfer({ standard: "TRC20", contract, amount, logIndex: 0 });
const trc10 = (amount: string, tokenId = "1002000") => transfer({ standard: "TRC10", tokenId, amount });
const match = (over: Partial<MatchConditions>): MatchConditions => ({ ...defaultMatch(), ...over });
const BOTH: Role[] = ["from", "to"];

describe("passingRoles by example", () => {
  test("the default lets every asset and both roles through, but no zero-value transfer", () => {
    expect(passingRoles(DEFAULT_MATCH, transfer(), BOTH)).toEqual(BOTH);
    expect(passingRoles(DEFAULT_MATCH, trc20("1"), ["to"])).toEqual(["to"]);
    expect(passingRoles(DEFAULT_MATCH, trc20("0"), BOTH)).toEqual([]);
    expect(passingRoles(DEFAULT_MATCH, transfer({ amount: "0" }), ["from"])).toEqual([]);
    expect(passingRoles(DEFAULT_MATCH, trc10("0"), ["to"])).toEqual([]);
    expect(passingRoles(match({ includeZeroValue: true }), trc20("0"), BOTH)).toEqual(BOTH);
  });

  test("directions: incoming keeps `to`, outgoing keeps `from`; a self-transfer keeps only the role that passed", () => {
    const self = transfer({ from: ALICE, to: ALICE });
    expect(passingRoles(match({ directions: ["incoming"] }), self, BOTH)).toEqual(["to"]);
    expect(passingRoles(match({ directions: ["outgoing"] }), self, BOTH)).toEqual(["from"]);
    expect(passingRoles(match({ directions: ["outgoing", "incoming"] }), self, BOTH)).toEqual(BOTH);
    expect(passingRoles(match({ directions: ["incoming"] }), transfer(), ["from"])).toEqual([]);
  });

  test("assets: only the listed ones, each at or above its minAmount, compared as integers beyond 2^53", () => {
    const m = match({
      assets: [
        { standard: "TRC20", contract: USDT, minAmount: "1000000" },
        { standard: "TRC10", tokenId: "1002000", minAmount: "0" },
        { standard: "TRX", minAmount: "9007199254740993" },
      ],
    });
    expect(passingRoles(m, trc20("999999"), BOTH)).toEqual([]);
    expect(passingRoles(m, trc20("1000000"), BOTH)).toEqual(BOTH);
    expect(passingRoles(m, trc20("5000000", OTHER_TOKEN), BOTH)).toEqual([]);
    expect(passingRoles(m, trc10("1"), BOTH)).toEqual(BOTH);
    expect(passingRoles(m, trc10("1", "1002001"), BOTH)).toEqual([]);
    // 2^53 + 1 is not representable as a double: a Number comparison would call 9007199254740992 enough.
    expect(passingRoles(m, transfer({ amount: "9007199254740992" }), BOTH)).toEqual([]);
    expect(passingRoles(m, transfer({ amount: "9007199254740993" }), BOTH)).toEqual(BOTH);
    // An amount with leading zeros (no decoder makes one, but a comparison by length would misjudge it).
    expect(passingRoles(m, trc20("0001000000"), BOTH)).toEqual(BOTH);
    expect(passingRoles(m, trc20("0000999999"), BOTH)).toEqual([]);
    expect(passingRoles(DEFAULT_MATCH, trc20("000"), BOTH)).toEqual([]);
    // A listed minAmount of 0 does not let zero-value transfers through: that is includeZeroValue's job.
    expect(passingRoles(m, trc10("0"), BOTH)).toEqual([]);
    expect(passingRoles({ ...m, includeZeroValue: true }, trc10("0"), BOTH)).toEqual(BOTH);
  });

  test("failed transfers are judged the same way (conditions apply to every kind)", () => {
    const m = match({ assets: [{ standard: "TRC20", contract: USDT, minAmount: "10" }], directions: ["outgoing"] });
    expect(passingRoles(m, { ...trc20("10"), result: "REVERT" }, BOTH)).toEqual(["from"]);
    expect(passingRoles(m, { ...trc20("9"), result: "OUT_OF_ENERGY" }, BOTH)).toEqual([]);
  });

  test("the watch index's text form round-trips, and the default costs no text", () => {
    const m = match({ assets: [{ standard: "TRC10", tokenId: "1002000", minAmount: "5" }], directions: ["incoming"] });
    expect(encodeMatch(defaultMatch())).toBe("");
    expect(decodeMatch("")).toEqual(defaultMatch());
    expect(decodeMatch(encodeMatch(m))).toEqual(m);
    expect(decodeMatch(encodeMatch(m))).toBe(decodeMatch(encodeMatch(m)));
    expect(encodeMatch(m)).not.toContain("|");
  });
});

// ---- properties -------------------------------------------------------------------------------------------------

const amountArb = fc.oneof(fc.constant(0n), fc.bigInt({ min: 0n, max: 10n ** 8n }), fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }));
const assetArb = fc.oneof(
  fc.constant({ standard: "TRX" as const }),
  fc.constantFrom("1002000", "1000001").map((tokenId) => ({ standard: "TRC10" as const, tokenId })),
  fc.constantFrom(USDT, OTHER_TOKEN).map((contract) => ({ standard: "TRC20" as const, contract })),
);
const transferArb = fc.record({ asset: assetArb, amount: amountArb }).map(({ asset, amount }) =>
  transfer({
    standard: asset.standard,
    tokenId: asset.standard === "TRC10" ? asset.tokenId : null,
    contract: asset.standard === "TRC20" ? asset.contract : null,
    amount: amount.toString(),
  }),
);
const conditionArb = fc.record({ asset: assetArb, min: amountArb }).map(({ asset, min }) => ({ ...asset, minAmount: min.toString() }) as AssetCondition);
const matchArb: fc.Arbitrary<MatchConditions> = fc.record({
  assets: fc.option(fc.uniqueArray(conditionArb, { minLength: 1, maxLength: 5, selector: (a) => JSON.stringify({ ...a, minAmount: undefined }) }), { nil: null }),
  directions: fc.subarray<MatchDirection>(["incoming", "outgoing"], { minLength: 1 }),
  includeZeroValue: fc.boolean(),
});
const rolesArb = fc.constantFrom<Role[]>(["from"], ["to"], ["from", "to"]);

/** The contract's rule, written out independently of the implementation's compiled form. */
function expected(m: MatchConditions, t: DecodedTransfer, roles: Role[]): Role[] {
  const amount = BigInt(t.amount);
  if (amount === 0n && !m.includeZeroValue) return [];
  if (m.assets) {
    const listed = m.assets.find(
      (a) =>
        a.standard === t.standard &&
        (a.standard !== "TRC10" || a.tokenId === t.tokenId) &&
        (a.standard !== "TRC20" || a.contract === t.contract),
    );
    if (!listed || amount < BigInt(listed.minAmount)) return [];
  }
  return roles.filter((r) => m.directions.includes(r === "to" ? "incoming" : "outgoing"));
}

describe("passingRoles by property", () => {
  test("agrees with the contract's rule, keeps the given order, and never adds a role", () => {
    fc.assert(
      fc.property(matchArb, transferArb, rolesArb, (m, t, roles) => {
        const got = passingRoles(m, t, roles);
        expect(got).toEqual(expected(m, t, roles));
        expect(got.every((r) => roles.includes(r))).toBe(true);
        for (const r of roles) expect(rolePasses(m, t, r)).toBe(got.includes(r));
      }),
      { numRuns: 2_000 },
    );
  });

  test("raising the amount of a passing non-zero transfer never makes it fail", () => {
    fc.assert(
      fc.property(matchArb, transferArb, fc.bigInt({ min: 0n, max: 10n ** 30n }), rolesArb, (m, t, extra, roles) => {
        fc.pre(passingRoles(m, t, roles).length > 0);
        expect(passingRoles(m, { ...t, amount: (BigInt(t.amount) + extra).toString() }, roles)).toEqual(passingRoles(m, t, roles));
      }),
    );
  });

  test("the default is every non-zero transfer with every role", () => {
    fc.assert(
      fc.property(transferArb, rolesArb, (t, roles) => {
        expect(passingRoles(DEFAULT_MATCH, t, roles)).toEqual(t.amount === "0" ? [] : roles);
      }),
    );
  });
});

describe("buildEvents applies each watcher's conditions", () => {
  const block = { chainId: "tron:mainnet" as const, number: 1, blockId: "00".repeat(32), timestampMs: 0 };
  const watcher = (subscriptionId: string, m: MatchConditions): Watcher => ({ subscriptionId, keyId: "key_1", active: true, events: [BROADCASTED], match: m });

  test("a self-transfer: matchedAddresses lists only the passing roles; a filtered transfer makes no event", () => {
    const incoming = watcher("sub_in", match({ directions: ["incoming"] }));
    const all = watcher("sub_all", defaultMatch());
    const bigUsdt = watcher("sub_usdt", match({ assets: [{ standard: "TRC20", contract: USDT, minAmount: "100" }] }));
    const watched = new Map([[ALICE, [incoming, all, bigUsdt]]]);
    const self = { ...trc20("50"), from: ALICE, to: ALICE };
    const events = buildEvents(block, [self, { ...self, amount: "0", logIndex: 1 }], watched, BROADCASTED);
    const bySub = Object.fromEntries(events.map((e) => [`${e.subscriptionId}#${e.transfer!.logIndex}`, e.transfer!.matchedAddresses.map((m) => m.role)]));
    expect(bySub).toEqual({ "sub_in#0": ["to"], "sub_all#0": ["from", "to"] });
  });
});
