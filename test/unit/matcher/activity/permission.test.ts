// AccountPermissionUpdateContract in both JSON forms, shaped as java-tron prints it (account_contract.proto and
// Tron.proto's Permission / Key; proto3 leaves defaults out: the Owner type, id 0, a zero threshold). Key addresses
// are converted by tronweb for the expectations.
import { describe, expect, test } from "bun:test";
import { decodeActivities } from "../../../../matcher/activity/decode.ts";
import { FORMS, address, block, info, printed, tx, type Form } from "../../../support/tron-json.ts";

const opts = { chainId: "tron:mainnet" as const, blacklistContracts: new Set<string>() };
const account = address(1);
const cosigner = address(2);
const stranger = address(3);
const witnessKey = address(4);
const OPERATIONS = "7fff1fc0033e0300000000000000000000000000000000000000000000000000";

function update(form: Form, withWitness: boolean) {
  return tx("AccountPermissionUpdateContract", {
    owner_address: printed(account, form),
    owner: {
      permission_name: "owner",
      threshold: 2,
      keys: [
        { address: printed(account, form), weight: 1 },
        { address: printed(stranger, form), weight: 1 },
      ],
    },
    ...(withWitness
      ? { witness: { type: "Witness", id: 1, permission_name: "witness", threshold: 1, keys: [{ address: printed(witnessKey, form), weight: 1 }] } }
      : {}),
    actives: [
      { type: "Active", id: 2, permission_name: "active0", threshold: 3, operations: OPERATIONS, keys: [{ address: printed(cosigner, form), weight: 3 }] },
      { type: "Active", id: 3, operations: OPERATIONS, keys: [{ address: printed(stranger, form) }] },
    ],
  });
}

describe("wallet.permission: AccountPermissionUpdateContract", () => {
  for (const form of FORMS) {
    test(`${form}: the permissions as set, key addresses in base58, absent defaults as 0 and ""`, () => {
      const t = update(form, false);
      const [a, ...rest] = decodeActivities(block([t]), [info(t, { fee: 100_000_000 })], opts);
      expect(rest).toEqual([]);
      expect(a).toEqual({
        family: "permission",
        txId: t.txID,
        logIndex: -1,
        parties: [{ address: account, role: "owner" }],
        detail: {
          case: "permission",
          value: {
            address: account,
            owner: {
              name: "owner",
              threshold: 2n,
              operations: "",
              keys: [
                { address: account, weight: 1n },
                { address: stranger, weight: 1n },
              ],
            },
            witness: undefined,
            actives: [
              { name: "active0", threshold: 3n, operations: OPERATIONS, keys: [{ address: cosigner, weight: 3n }] },
              { name: "", threshold: 0n, operations: OPERATIONS, keys: [{ address: stranger, weight: 0n }] },
            ],
          },
        },
        fee: "100000000",
        result: "SUCCESS",
      });
    });

    test(`${form}: a witness permission is kept`, () => {
      const t = update(form, true);
      const [a] = decodeActivities(block([t]), null, opts);
      expect(a!.detail).toMatchObject({ value: { witness: { name: "witness", threshold: 1n, operations: "", keys: [{ address: witnessKey, weight: 1n }] } } });
      expect(a!.fee).toBe("0");
    });
  }

  test("a key that is no address, or an update without an owner permission, makes nothing", () => {
    const broken = update("hex", false);
    (broken.raw_data.contract[0]!.parameter.value.owner as { keys: { address: string }[] }).keys[0]!.address = "41zz";
    const ownerless = update("visible", false);
    delete ownerless.raw_data.contract[0]!.parameter.value.owner;
    expect(decodeActivities(block([broken, ownerless]), null, opts)).toEqual([]);
  });
});
