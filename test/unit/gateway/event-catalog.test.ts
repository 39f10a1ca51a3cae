// The catalog's activity examples (the OpenAPI `webhooks` section, the README) are what the deliverer makes of such
// an activity: each example's data, read back into the Activity message the matcher sends, renders to the example's
// bytes exactly (same fields, same values, same key order).
import { describe, expect, test } from "bun:test";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { ACTIVITY_KINDS, familyOf, type ActivityKind } from "../../../common/contract/index.ts";
import { activityData, envelope, renderPayload } from "../../../deliverer/payload.ts";
import { ActivitySchema, type Activity } from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { EXAMPLE_PAYLOADS, exampleDelivery } from "../../../gateway/event-catalog.ts";

type Json = Record<string, any>;

const asset = (a: Json) => ({
  type: a.type, standard: a.standard, contract: a.contract ?? undefined, tokenId: a.tokenId ?? undefined,
  symbol: a.symbol ?? undefined, decimals: a.decimals ?? undefined,
});
const permission = (p: Json) => ({
  name: p.name ?? "", threshold: BigInt(p.threshold), operations: p.operations ?? "",
  keys: (p.keys as Json[]).map((k) => ({ address: k.address, weight: BigInt(k.weight) })),
});

/** The Activity message the matcher would send for an example's data. */
function activityOf(kind: ActivityKind, d: Json): Activity {
  const detail: MessageInitShape<typeof ActivitySchema>["detail"] = (() => {
    switch (familyOf(kind)) {
      case "approval":
        return { case: "approval" as const, value: { owner: d.owner, spender: d.spender, amount: d.amount, asset: asset(d.asset) } };
      case "permission":
        return {
          case: "permission" as const,
          value: { address: d.address, owner: permission(d.owner), witness: d.witness ? permission(d.witness) : undefined, actives: (d.actives as Json[]).map(permission) },
        };
      case "resource":
        return {
          case: "resource" as const,
          value: {
            type: d.type, owner: d.owner, resource: d.resource ?? undefined, amount: d.amount ?? undefined, receiver: d.receiver ?? undefined,
            lock: d.lock ?? undefined, lockPeriod: d.lockPeriod === null ? undefined : BigInt(d.lockPeriod),
            votes: ((d.votes ?? []) as Json[]).map((v) => ({ address: v.address, count: BigInt(v.count) })),
          },
        };
      case "blacklist":
        return { case: "blacklist" as const, value: { type: d.type, address: d.address, amount: d.amount ?? undefined, asset: asset(d.asset) } };
    }
  })();
  return create(ActivitySchema, {
    chainId: d.chainId, blockNumber: BigInt(d.blockNumber), blockHash: d.blockHash, blockTimestampMs: BigInt(d.blockTimestamp),
    txId: d.txId, logIndex: d.logIndex, fee: d.fee, matchedAddresses: d.matchedAddresses,
    solidifiedBlockNumber: BigInt(d.solidifiedBlockNumber ?? 0), detail,
  });
}

describe("activity examples", () => {
  test.each([...ACTIVITY_KINDS])("%s: the deliverer's rendering of the same activity, byte for byte", (kind) => {
    const example = EXAMPLE_PAYLOADS[kind];
    const data = activityData(activityOf(kind, example.data as Json), kind, null);
    const body = renderPayload(envelope(example.id, kind, example.subscriptionId, new Date(example.date), data));
    expect(body).toBe(exampleDelivery(kind).body);
  });

  test("a .confirmed example is its .broadcasted one plus the solidified head, 19 blocks on", () => {
    for (const family of ["approval", "permission", "resource", "blacklist"] as const) {
      const { solidifiedBlockNumber, ...rest } = EXAMPLE_PAYLOADS[`wallet.${family}.confirmed`].data;
      expect(rest).toEqual(EXAMPLE_PAYLOADS[`wallet.${family}.broadcasted`].data);
      expect(solidifiedBlockNumber).toBe(rest.blockNumber + 19);
    }
  });
});
