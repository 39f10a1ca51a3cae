// Enqueue (the matcher's call): one event per (subscription, chain, txId, logIndex), however often a block is read;
// no events for subscriptions that are gone or disabled; bad input changes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { create } from "@bufbuild/protobuf";
import { fromRpcError } from "../../common/errors.ts";
import { NewEventSchema } from "../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { sampleTransfer, startDeliveryBed, waitForEvent, type DeliveryBed } from "../support/delivery.ts";

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
        from: t1!.from,
        to: t1!.to,
        amount: "1000001",
        asset: { type: "native", standard: "TRX", contract: null, tokenId: null, symbol: "TRX", decimals: 6 },
        matchedAddresses: [{ chainId: "tron:nile", address: t1!.to, role: "to" }],
      },
    });
    expect(new Date(payload.date).toISOString()).toBe(payload.date);
    await bed.receiver.waitForCount("/enq", 2);
    await Bun.sleep(200);
    expect(bed.receiver.count("/enq")).toBe(2);
    const body = bed.receiver.deliveries("/enq").find((d) => d.headers["webhook-id"] === ref.eventId)!.body;
    expect(body).toBe(e.payloadJson);
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
