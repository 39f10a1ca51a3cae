// Enqueue of account activity (docs/CONTRACT.md "Account activity"): each family's payload exactly, in the contract's
// key order; one event per (subscription, kind, chain, txId, logIndex) with the family in the kind, so a block read
// again makes none and broadcasted and confirmed are two; a malformed activity refused whole; the search finds an
// activity by its addresses.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { ActivitySchema, NewEventSchema, type Activity } from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { rpcOutcome, startDeliveryBed, waitForEvent, type DeliveryBed } from "../../support/delivery.ts";

let bed: DeliveryBed;

beforeAll(async () => {
  bed = await startDeliveryBed();
}, 60_000);

afterAll(async () => {
  await bed?.stop();
}, 60_000);

const CHAIN = "tron:mainnet";
const WALLET = "TXCvUayMx6AuBvS7qBa79ZAfhrwSA7vTjG";
const OTHER = "TPcUx2iwjomVzmX3CHDDYmnEPJFTVeyqqS";
const ROUTER = "TKzxdSv2FZKQrEqkKVgp5DcwEXBEKMg2Ax";
const DELEGATOR = "TGsoR5dSDkRRU9tUPb3STBB7RFh77RTED4";
const USDT = { type: "fungible", standard: "TRC20", contract: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", symbol: "USDT", decimals: 6 };
const USDT_JSON = { type: "fungible", standard: "TRC20", contract: USDT.contract, tokenId: null, symbol: "USDT", decimals: 6 };

type ActivityInit = MessageInitShape<typeof ActivitySchema>;
type Detail = ActivityInit["detail"];

/** An activity of block 61132092 + n; its txId is n's. */
function activity(n: number, detail: Detail, over: ActivityInit = {}): Activity {
  const init: ActivityInit = {
    chainId: CHAIN,
    blockNumber: BigInt(61132092 + n),
    blockHash: n.toString(16).padStart(64, "0"),
    blockTimestampMs: 1714038858000n + BigInt(n * 3000),
    txId: (n + 0xac7000).toString(16).padStart(64, "0"),
    logIndex: detail?.case === "approval" || detail?.case === "blacklist" ? 2 : -1,
    fee: "0",
    matchedAddresses: [{ chainId: CHAIN, address: WALLET, role: "owner" }],
    ...(detail ? { detail } : {}),
  };
  return create(ActivitySchema, { ...init, ...over });
}

const approval = (amount: string): Detail => ({ case: "approval", value: { owner: WALLET, spender: ROUTER, amount, asset: USDT } });

async function eventCount(subscriptionId: string): Promise<number> {
  const [row] = (await bed.sql`SELECT count(*)::int AS n FROM events WHERE subscription_id = ${subscriptionId}`) as { n: number }[];
  return row!.n;
}

describe("Enqueue of account activity", () => {
  test("each family's payload: exactly the contract's fields, in its order, delivered as stored", async () => {
    const sub = await bed.subscribe("/act-shape");
    const keys = [{ address: WALLET, weight: 1n }, { address: OTHER, weight: 1n }];
    const cases: { kind: string; activity: Activity; data: Record<string, unknown> }[] = [
      {
        kind: "wallet.approval.broadcasted",
        activity: activity(1, approval(((1n << 256n) - 1n).toString()), { fee: "4841560" }),
        data: {
          owner: WALLET, spender: ROUTER, amount: ((1n << 256n) - 1n).toString(), unlimited: true, asset: USDT_JSON,
          fee: "4841560",
        },
      },
      {
        kind: "wallet.permission.broadcasted",
        activity: activity(2, {
          case: "permission",
          value: {
            address: WALLET,
            owner: { name: "owner", threshold: 2n, keys },
            witness: { threshold: 1n, keys: [{ address: WALLET, weight: 1n }] },
            actives: [{ name: "active", threshold: 2n, operations: "7fff1fc0033e0000000000000000000000000000000000000000000000000000", keys }],
          },
        }, { fee: "100000000" }),
        data: {
          address: WALLET,
          owner: { threshold: 2, keys: [{ address: WALLET, weight: 1 }, { address: OTHER, weight: 1 }] },
          witness: { threshold: 1, keys: [{ address: WALLET, weight: 1 }] },
          actives: [{
            name: "active", threshold: 2, operations: "7fff1fc0033e0000000000000000000000000000000000000000000000000000",
            keys: [{ address: WALLET, weight: 1 }, { address: OTHER, weight: 1 }],
          }],
          fee: "100000000",
        },
      },
      {
        kind: "wallet.resource.broadcasted",
        activity: activity(3, {
          case: "resource",
          value: { type: "delegate", owner: WALLET, resource: "ENERGY", amount: "5126000000", receiver: OTHER, lock: true, lockPeriod: 28800n },
        }),
        data: { type: "delegate", owner: WALLET, resource: "ENERGY", amount: "5126000000", receiver: OTHER, lock: true, lockPeriod: 28800, votes: null, fee: "0" },
      },
      {
        kind: "wallet.blacklist.broadcasted",
        activity: activity(4, { case: "blacklist", value: { type: "funds_destroyed", address: WALLET, amount: "1500000000", asset: USDT } }, {
          matchedAddresses: [{ chainId: CHAIN, address: WALLET, role: "blacklisted" }],
        }),
        data: { type: "funds_destroyed", address: WALLET, amount: "1500000000", asset: USDT_JSON, fee: "0" },
      },
    ];
    const res = await bed.delivery.enqueue({
      events: cases.map((c) => create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind: c.kind, activity: c.activity })),
    });
    expect(res.created).toBe(4);
    await bed.receiver.waitForCount("/act-shape", 4);
    for (const [i, c] of cases.entries()) {
      const ref = { ...sub, eventId: res.eventIds[i]! };
      const e = await waitForEvent(bed, ref, (v) => v.status === "delivered");
      expect([e.kind, e.chainId]).toEqual([c.kind, CHAIN]);
      const a = c.activity;
      const { fee, ...own } = c.data;
      const expected = {
        chainId: CHAIN,
        blockNumber: Number(a.blockNumber),
        blockHash: a.blockHash,
        blockTimestamp: Number(a.blockTimestampMs),
        txId: a.txId,
        logIndex: a.logIndex,
        ...own,
        fee,
        matchedAddresses: a.matchedAddresses.map((m) => ({ chainId: m.chainId, address: m.address, role: m.role })),
        backfill: null,
      };
      const payload = JSON.parse(e.payloadJson) as Record<string, unknown>;
      expect(payload).toEqual({ id: ref.eventId, kind: c.kind, date: expect.any(String), subscriptionId: sub.subscriptionId, data: expected });
      // The order is the contract's: the JSON text is the expected object's, key for key.
      expect(JSON.stringify(payload.data)).toBe(JSON.stringify(expected));
      const body = bed.receiver.deliveries("/act-shape").find((d) => d.headers["webhook-id"] === ref.eventId)?.body;
      expect(body).toBe(e.payloadJson);
    }
  });

  test("resource moves other than a delegation: lock and lockPeriod null, votes only for a vote, amount null without one", async () => {
    const sub = await bed.subscribe("/act-resource");
    const moves: [Detail, Record<string, unknown>][] = [
      [{ case: "resource", value: { type: "freeze", owner: WALLET, resource: "BANDWIDTH", amount: "20558956" } },
        { type: "freeze", owner: WALLET, resource: "BANDWIDTH", amount: "20558956", receiver: null, lock: null, lockPeriod: null, votes: null }],
      [{ case: "resource", value: { type: "undelegate", owner: WALLET, resource: "ENERGY", amount: "5055000000", receiver: OTHER } },
        { type: "undelegate", owner: WALLET, resource: "ENERGY", amount: "5055000000", receiver: OTHER, lock: null, lockPeriod: null, votes: null }],
      // A delegation without lock: lock false, lockPeriod 0.
      [{ case: "resource", value: { type: "delegate", owner: WALLET, resource: "ENERGY", amount: "2545000000", receiver: OTHER } },
        { type: "delegate", owner: WALLET, resource: "ENERGY", amount: "2545000000", receiver: OTHER, lock: false, lockPeriod: 0, votes: null }],
      [{ case: "resource", value: { type: "vote", owner: WALLET, votes: [{ address: OTHER, count: 1200n }, { address: ROUTER, count: 5n }] } },
        { type: "vote", owner: WALLET, resource: null, amount: null, receiver: null, lock: null, lockPeriod: null, votes: [{ address: OTHER, count: 1200 }, { address: ROUTER, count: 5 }] }],
      [{ case: "resource", value: { type: "withdraw_rewards", owner: WALLET, amount: "1843021" } },
        { type: "withdraw_rewards", owner: WALLET, resource: null, amount: "1843021", receiver: null, lock: null, lockPeriod: null, votes: null }],
    ];
    const res = await bed.delivery.enqueue({
      events: moves.map(([detail], i) => create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind: "wallet.resource.confirmed", activity: activity(20 + i, detail, { solidifiedBlockNumber: 61132200n }) })),
    });
    expect(res.created).toBe(moves.length);
    for (const [i, [, fields]] of moves.entries()) {
      const e = await waitForEvent(bed, { ...sub, eventId: res.eventIds[i]! }, () => true);
      const data = JSON.parse(e.payloadJson).data as Record<string, unknown>;
      expect(data).toMatchObject({ ...fields, solidifiedBlockNumber: 61132200 });
      expect(Object.keys(data)).toEqual([
        "chainId", "blockNumber", "blockHash", "blockTimestamp", "txId", "logIndex", "type", "owner", "resource", "amount",
        "receiver", "lock", "lockPeriod", "votes", "fee", "solidifiedBlockNumber", "matchedAddresses", "backfill",
      ]);
    }
  });

  test("unlimited from 2^255; a revocation (0) is delivered; a blacklisting has no amount", async () => {
    const sub = await bed.subscribe("/act-unlimited");
    const amounts = [(1n << 255n).toString(), ((1n << 255n) - 1n).toString(), "0", "1000000"];
    const res = await bed.delivery.enqueue({
      events: [
        ...amounts.map((amount, i) => create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind: "wallet.approval.confirmed", activity: activity(30 + i, approval(amount), { solidifiedBlockNumber: 61132300n }) })),
        create(NewEventSchema, {
          subscriptionId: sub.subscriptionId,
          kind: "wallet.blacklist.broadcasted",
          activity: activity(40, { case: "blacklist", value: { type: "added", address: WALLET, asset: { ...USDT, symbol: undefined, decimals: undefined } } }),
        }),
      ],
    });
    expect(res.created).toBe(5);
    const data = async (i: number) =>
      JSON.parse((await waitForEvent(bed, { ...sub, eventId: res.eventIds[i]! }, () => true)).payloadJson).data as Record<string, unknown>;
    expect((await data(0)).unlimited).toBe(true);
    expect((await data(1)).unlimited).toBe(false);
    expect(await data(2)).toMatchObject({ amount: "0", unlimited: false, solidifiedBlockNumber: 61132300 });
    expect((await data(3)).unlimited).toBe(false);
    // Symbol and decimals null for a token the matcher does not know; amount null for anything but funds_destroyed.
    expect(await data(4)).toMatchObject({ type: "added", amount: null, asset: { ...USDT_JSON, symbol: null, decimals: null } });
    expect("solidifiedBlockNumber" in (await data(4))).toBe(false);
  });

  test("identity: a block read again makes no second event; broadcasted and confirmed are two; families are apart", async () => {
    const sub = await bed.subscribe("/act-identity");
    const a = activity(50, approval("1000000"));
    // A permission and a resource move of the same transaction, both logIndex -1: the family (in the kind) keeps them apart.
    const permission = activity(51, { case: "permission", value: { address: WALLET, owner: { threshold: 1n, keys: [{ address: WALLET, weight: 1n }] } } });
    const resource = activity(51, { case: "resource", value: { type: "freeze", owner: WALLET, resource: "ENERGY", amount: "1000000" } });
    const event = (kind: string, act: Activity) => create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind, activity: act });
    const batch = [
      event("wallet.approval.broadcasted", a),
      event("wallet.approval.confirmed", { ...a, solidifiedBlockNumber: 61132161n }),
      event("wallet.approval.broadcasted", a),
      event("wallet.permission.broadcasted", permission),
      event("wallet.resource.broadcasted", resource),
    ];
    const first = await bed.delivery.enqueue({ events: batch });
    expect(first.created).toBe(4);
    expect(first.eventIds[2]).toBe(first.eventIds[0]!);
    expect(first.made).toEqual([true, true, false, true, true]);
    expect(new Set(first.eventIds).size).toBe(4);
    // The same block again, and after a fork the approval in another block: the same events, none new.
    const moved = { ...a, blockNumber: a.blockNumber + 1n, blockHash: "ef".repeat(32) };
    const [again, refork] = await Promise.all([
      bed.delivery.enqueue({ events: batch }),
      bed.delivery.enqueue({ events: [event("wallet.approval.broadcasted", moved)] }),
    ]);
    expect([again.created, refork.created]).toEqual([0, 0]);
    expect(again.eventIds).toEqual(first.eventIds);
    expect(refork.eventIds).toEqual([first.eventIds[0]!]);
    expect(await eventCount(sub.subscriptionId)).toBe(4);
    const rows = (await bed.sql`SELECT kind, log_index, internal_index FROM events WHERE subscription_id = ${sub.subscriptionId} ORDER BY kind`) as {
      kind: string; log_index: number; internal_index: number;
    }[];
    expect(rows.map((r) => `${r.kind}:${r.log_index}:${r.internal_index}`)).toEqual([
      "wallet.approval.broadcasted:2:-1", "wallet.approval.confirmed:2:-1", "wallet.permission.broadcasted:-1:-1", "wallet.resource.broadcasted:-1:-1",
    ]);
  });

  test("the search finds an activity by a matched address, a party it names and its txId", async () => {
    const sub = await bed.subscribe("/act-search");
    const a = activity(60, approval("25000000"), { matchedAddresses: [{ chainId: CHAIN, address: WALLET, role: "owner" }] });
    const res = await bed.delivery.enqueue({ events: [create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind: "wallet.approval.broadcasted", activity: a })] });
    const id = res.eventIds[0]!;
    const ids = async (f: { address?: string; txId?: string; kind?: string }) =>
      (await bed.delivery.searchEvents({ keyId: sub.keyId, limit: 50, ...f })).items.map((e) => e.id);
    expect(await ids({ address: WALLET })).toEqual([id]);
    // The spender is not watched, but the approval names it, as a transfer's counterparty is found.
    expect(await ids({ address: ROUTER })).toEqual([id]);
    expect(await ids({ txId: a.txId })).toEqual([id]);
    expect(await ids({ address: OTHER })).toEqual([]);
    // A delegation matched by its receiver only: its owner, the delegator, is a party it names.
    const delegation = activity(61, { case: "resource", value: { type: "delegate", owner: DELEGATOR, resource: "ENERGY", amount: "1", receiver: OTHER } }, {
      matchedAddresses: [{ chainId: CHAIN, address: OTHER, role: "receiver" }],
    });
    const [delegated] = (await bed.delivery.enqueue({
      events: [create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind: "wallet.resource.broadcasted", activity: delegation })],
    })).eventIds;
    expect(await ids({ address: DELEGATOR })).toEqual([delegated!]);
    expect(await ids({ address: OTHER })).toEqual([delegated!]);
  });

  test("a malformed activity is invalid_request and the call creates nothing", async () => {
    const sub = await bed.subscribe("/act-bad");
    const good = create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind: "wallet.approval.broadcasted", activity: activity(70, approval("1")) });
    const ev = (kind: string, act?: Activity) => create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind, activity: act });
    const bad = [
      // No activity at all, or a transfer where the activity should be.
      ev("wallet.approval.broadcasted"),
      create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind: "wallet.resource.broadcasted", transfer: { chainId: CHAIN, txId: "ab".repeat(32) } }),
      // The detail of another family, or none.
      ev("wallet.permission.broadcasted", activity(71, approval("1"))),
      ev("wallet.blacklist.confirmed", activity(72, undefined)),
      // Unknown chain, no txId.
      ev("wallet.approval.broadcasted", activity(73, approval("1"), { chainId: "tron:nope" })),
      ev("wallet.approval.broadcasted", activity(74, approval("1"), { txId: "" })),
      // What the payload needs: the token, a decimal amount, the owner permission.
      ev("wallet.approval.broadcasted", activity(75, { case: "approval", value: { owner: WALLET, spender: ROUTER, amount: "1" } })),
      ev("wallet.approval.broadcasted", activity(76, approval("0x10"))),
      ev("wallet.permission.broadcasted", activity(77, { case: "permission", value: { address: WALLET } })),
      // A type the contract does not list.
      ev("wallet.resource.broadcasted", activity(79, { case: "resource", value: { type: "freeze_v1", owner: WALLET, resource: "ENERGY", amount: "1" } })),
      ev("wallet.blacklist.broadcasted", activity(80, { case: "blacklist", value: { type: "frozen", address: WALLET, asset: USDT } })),
      ev("wallet.resource.broadcasted", activity(81, { case: "resource", value: { type: "freeze", owner: WALLET, resource: "energy", amount: "1" } })),
      // A resource move without its owner, with a hex one, or with a broken checksum.
      ev("wallet.resource.broadcasted", activity(82, { case: "resource", value: { type: "freeze", resource: "ENERGY", amount: "1" } })),
      ev("wallet.resource.broadcasted", activity(83, { case: "resource", value: { type: "freeze", owner: "414bc31cba1815a2142725e4ad638e7a4144089f86", resource: "ENERGY", amount: "1" } })),
      ev("wallet.resource.broadcasted", activity(84, { case: "resource", value: { type: "freeze", owner: `${WALLET.slice(0, -1)}H`, resource: "ENERGY", amount: "1" } })),
      // Not a kind Enqueue makes.
      ev("wallet.approval.failed", activity(78, approval("1"))),
    ];
    for (const b of bad) expect(await rpcOutcome(bed.delivery.enqueue({ events: [good, b] }))).toBe("invalid_request");
    expect(await eventCount(sub.subscriptionId)).toBe(0);
    expect((await bed.delivery.enqueue({ events: [good] })).created).toBe(1);
  });
});
