// Enqueue (the matcher's call): one event per (subscription, kind, chain, txId, logIndex, internalIndex), however
// often a block is read; the three transfer kinds with their payload fields; no events for subscriptions that are
// gone or disabled; bad input changes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { create } from "@bufbuild/protobuf";
import { fromRpcError } from "../../../common/rpc-errors.ts";
import { NewEventSchema, type Transfer } from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { sampleTransfer, startDeliveryBed, waitForEvent, type DeliveryBed } from "../../support/delivery.ts";

let bed: DeliveryBed;

beforeAll(async () => {
  bed = await startDeliveryBed();
}, 60_000);

afterAll(async () => {
  await bed?.stop();
}, 60_000);

const kind = "wallet.transfer.broadcasted";

async function eventCount(subscriptionId: string): Promise<number> {
  const [row] = (await bed.sql`SELECT count(*)::int AS n FROM events WHERE subscription_id = ${subscriptionId}`) as { n: number }[];
  return row!.n;
}

describe("Enqueue", () => {
  test("a re-read block never makes a second event; the payload carries the transfer", async () => {
    const sub = await bed.subscribe("/enq");
    const t1 = sampleTransfer(1);
    const t2 = { ...sampleTransfer(2), logIndex: 3 };
    const batch = [
      create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind, transfer: t1 }),
      create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind, transfer: t2 }),
      create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind, transfer: t1 }),
    ];
    const first = await bed.delivery.enqueue({ events: batch });
    expect(first.created).toBe(2);
    expect(first.eventIds[0]).toMatch(/^evt_/);
    expect(first.eventIds[2]).toBe(first.eventIds[0]!);
    // The same block read again, also concurrently.
    const [again, third] = await Promise.all([bed.delivery.enqueue({ events: batch }), bed.delivery.enqueue({ events: batch })]);
    expect(again.created + third.created).toBe(0);
    expect(again.eventIds).toEqual(first.eventIds);
    expect(third.eventIds).toEqual(first.eventIds);
    expect(await eventCount(sub.subscriptionId)).toBe(2);

    const ref = { ...sub, eventId: first.eventIds[0]! };
    const e = await waitForEvent(bed, ref, (v) => v.status === "delivered");
    expect(e.kind).toBe(kind);
    expect(e.chainId).toBe("tron:nile");
    const payload = JSON.parse(e.payloadJson);
    expect(payload).toEqual({
      id: ref.eventId,
      kind,
      date: payload.date,
      subscriptionId: sub.subscriptionId,
      data: {
        chainId: "tron:nile",
        blockNumber: 1001,
        blockHash: t1!.blockHash,
        blockTimestamp: Number(t1!.blockTimestampMs),
        txId: t1!.txId,
        logIndex: -1,
        internalIndex: -1,
        from: t1!.from,
        to: t1!.to,
        amount: "1000001",
        asset: { type: "native", standard: "TRX", contract: null, tokenId: null, symbol: "TRX", decimals: 6 },
        fee: "0",
        memo: null,
        matchedAddresses: [{ chainId: "tron:nile", address: t1!.to, role: "to" }],
        backfill: null,
      },
    });
    expect(new Date(payload.date).toISOString()).toBe(payload.date);
    await bed.receiver.waitForCount("/enq", 2);
    await Bun.sleep(200);
    expect(bed.receiver.count("/enq")).toBe(2);
    const body = bed.receiver.deliveries("/enq").find((d) => d.headers["webhook-id"] === ref.eventId)!.body;
    expect(body).toBe(e.payloadJson);
  });

  test("a transfer re-included in a block of the next UTC day keeps its one event (no second webhook-id)", async () => {
    const sub = await bed.subscribe("/enq-midnight");
    const midnight = Math.floor(Date.now() / 86_400_000) * 86_400_000;
    // The same transaction in a block of 23:59:58 and, after a fork, in the replacement block of 00:00:01.
    const before = { ...sampleTransfer(40), blockNumber: 1040n, blockTimestampMs: BigInt(midnight - 2_000) };
    const after = { ...before, blockHash: "ef".repeat(32), blockNumber: 1041n, blockTimestampMs: BigInt(midnight + 1_000) };
    const event = (transfer: Transfer) => create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind, transfer });
    const first = await bed.delivery.enqueue({ events: [event(before)] });
    expect(first.created).toBe(1);
    const again = await bed.delivery.enqueue({ events: [event(after)] });
    expect([again.created, again.eventIds]).toEqual([0, first.eventIds]);
    expect(await eventCount(sub.subscriptionId)).toBe(1);
    await bed.receiver.waitForCount("/enq-midnight", 1);
    await Bun.sleep(200);
    expect(bed.receiver.deliveries("/enq-midnight").map((d) => d.headers["webhook-id"])).toEqual(first.eventIds);
  });

  test("each kind of the same transfer is its own event, and internal transfers of one transaction are distinct", async () => {
    const sub = await bed.subscribe("/enq-kinds");
    const base = { ...sampleTransfer(30), fee: "2086320", memo: "invoice 42 ✓" };
    const internal0 = { ...sampleTransfer(30), internalIndex: 0, fee: "433850" };
    const internal2 = { ...internal0, internalIndex: 2 };
    const event = (k: string, transfer: Transfer) => create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind: k, transfer });
    const batch = [
      event(kind, base),
      event("wallet.transfer.confirmed", { ...base, solidifiedBlockNumber: 1049n }),
      event("wallet.transfer.failed", { ...base, reason: "REVERT", solidifiedBlockNumber: 1050n }),
      event(kind, internal0),
      event(kind, internal2),
    ];
    const first = await bed.delivery.enqueue({ events: batch });
    expect(first.created).toBe(5);
    expect(new Set(first.eventIds).size).toBe(5);
    const again = await bed.delivery.enqueue({ events: [...batch].reverse() });
    expect(again.created).toBe(0);
    expect(again.eventIds).toEqual([...first.eventIds].reverse());
    expect(await eventCount(sub.subscriptionId)).toBe(5);
    // The key's search by txId finds each event once, newest first (the block read again wrote no second ref).
    const byTx = await bed.delivery.searchEvents({ keyId: sub.keyId, txId: base.txId, limit: 50 });
    expect(byTx.items.map((e) => e.id).sort()).toEqual([...first.eventIds].sort());
    const [{ refs }] = (await bed.sql`SELECT count(*)::int AS refs FROM event_tx_refs WHERE key_id = ${sub.keyId} AND tx_id = ${base.txId}`) as [{ refs: number }];
    expect(refs).toBe(5);

    const data = async (i: number) => {
      const e = await waitForEvent(bed, { ...sub, eventId: first.eventIds[i]! }, () => true);
      return { kind: e.kind, data: JSON.parse(e.payloadJson).data as Record<string, unknown> };
    };
    const broadcasted = await data(0);
    expect(broadcasted.kind).toBe(kind);
    expect(broadcasted.data).toMatchObject({ txId: base.txId, logIndex: -1, internalIndex: -1, fee: "2086320", memo: "invoice 42 ✓" });
    expect("reason" in broadcasted.data).toBe(false);
    expect("solidifiedBlockNumber" in broadcasted.data).toBe(false);
    const confirmed = await data(1);
    expect(confirmed.kind).toBe("wallet.transfer.confirmed");
    expect(confirmed.data).toMatchObject({ txId: base.txId, internalIndex: -1, fee: "2086320", solidifiedBlockNumber: 1049 });
    expect("reason" in confirmed.data).toBe(false);
    const failed = await data(2);
    expect(failed.kind).toBe("wallet.transfer.failed");
    expect(failed.data).toMatchObject({ reason: "REVERT", solidifiedBlockNumber: 1050, memo: "invoice 42 ✓" });
    expect(Object.keys(failed.data)).toEqual([
      "chainId", "blockNumber", "blockHash", "blockTimestamp", "txId", "logIndex", "internalIndex", "from", "to",
      "amount", "asset", "fee", "memo", "reason", "solidifiedBlockNumber", "matchedAddresses", "backfill",
    ]);
    expect((await data(3)).data).toMatchObject({ internalIndex: 0, logIndex: -1, fee: "433850", memo: null });
    expect((await data(4)).data).toMatchObject({ internalIndex: 2 });
    const rows = (await bed.sql`SELECT kind, internal_index FROM events WHERE subscription_id = ${sub.subscriptionId}
      ORDER BY kind, internal_index`) as { kind: string; internal_index: number }[];
    expect(rows.map((r) => `${r.kind}:${r.internal_index}`)).toEqual([
      `${kind}:-1`, `${kind}:0`, `${kind}:2`, "wallet.transfer.confirmed:-1", "wallet.transfer.failed:-1",
    ]);
  });

  test("a call larger than one write (4,500 events) is whole, and idempotent when repeated", async () => {
    const sub = await bed.subscribe("/enq-big");
    bed.receiver.setBehaviour("/enq-big", { kind: "ok" });
    const events = Array.from({ length: 4_500 }, (_, i) =>
      create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind, transfer: sampleTransfer(50_000 + i) }),
    );
    const first = await bed.delivery.enqueue({ events });
    expect(first.created).toBe(4_500);
    expect(new Set(first.eventIds).size).toBe(4_500);
    const again = await bed.delivery.enqueue({ events });
    expect(again.created).toBe(0);
    expect(again.eventIds).toEqual(first.eventIds);
    expect(await eventCount(sub.subscriptionId)).toBe(4_500);
  });

  test("no events for a disabled or unknown subscription", async () => {
    const disabled = await bed.subscribe("/enq-disabled", { status: "disabled" });
    const res = await bed.delivery.enqueue({
      events: [
        create(NewEventSchema, { subscriptionId: disabled.subscriptionId, kind, transfer: sampleTransfer(10) }),
        create(NewEventSchema, { subscriptionId: "sub_01JZZZZZZZZZZZZZZZZZZZZZZZ", kind, transfer: sampleTransfer(11) }),
      ],
    });
    expect(res.eventIds).toEqual(["", ""]);
    expect(res.created).toBe(0);
    expect(await eventCount(disabled.subscriptionId)).toBe(0);
  });

  test("bad input is invalid_request and creates nothing", async () => {
    const sub = await bed.subscribe("/enq-bad");
    const good = create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind, transfer: sampleTransfer(20) });
    const bad = [
      create(NewEventSchema, { subscriptionId: "not-a-sub", kind, transfer: sampleTransfer(21) }),
      create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind: "service.ping", transfer: sampleTransfer(22) }),
      create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind, transfer: { ...sampleTransfer(23)!, chainId: "tron:nope" } }),
      create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind }),
      create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind: "wallet.transfer.pending", transfer: sampleTransfer(24) }),
      // A failed transfer without its reason.
      create(NewEventSchema, { subscriptionId: sub.subscriptionId, kind: "wallet.transfer.failed", transfer: sampleTransfer(25) }),
    ];
    for (const b of bad) {
      let codeSeen = "ok";
      try {
        await bed.delivery.enqueue({ events: [good, b] });
      } catch (err) {
        codeSeen = fromRpcError(err).code;
      }
      expect(codeSeen).toBe("invalid_request");
    }
    expect(await eventCount(sub.subscriptionId)).toBe(0);
  });
});
