// The event views the gateway answers with as text (gateway/routes/events/view.ts): the deliverer's payload JSON is spliced
// into the view instead of parsed and serialized again. The text must be exactly JSON.stringify of the view object
// the routes answered with before (field order included), for payloads with escapes and non-ASCII text too, and
// must pass the response schemas Elysia no longer checks on a Response.
import { describe, expect, test } from "bun:test";
import { create } from "@bufbuild/protobuf";
import { getSchemaValidator } from "elysia";
import { EventViewSchema as EventViewMessage, type EventView } from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { envelope, renderPayload, toEventView } from "../../../deliverer/payload.ts";
import { EventPageSchema, EventViewSchema, eventJson, eventPageJson, type EventViewJson } from "../../../gateway/routes/events/view.ts";
import { isoTime } from "../../../gateway/render.ts";

/** The view as an object, as the routes built it before answering with text. */
function viewObject(e: EventView): EventViewJson {
  return {
    id: e.id,
    subscriptionId: e.subscriptionId,
    kind: e.kind,
    chainId: e.chainId ?? null,
    status: e.status as EventViewJson["status"],
    attempts: e.attempts,
    deliveryCount: e.deliveryCount,
    responseStatus: e.responseStatus ?? null,
    responseBody: e.responseBody ?? null,
    heldReason: (e.heldReason ?? null) as EventViewJson["heldReason"],
    payload: JSON.parse(e.payloadJson) as Record<string, unknown>,
    dateCreated: isoTime(e.dateCreatedMs),
  };
}

const AWKWARD = 'quote " backslash \\ slash / newline \n tab \t nul \u0000 bell \u0007 del \u007f é 中文 😀 line sep \u2028 para \u2029 lone \ud800 end';

function transferRow(id: string, data: Record<string, unknown>, overrides: Partial<Parameters<typeof toEventView>[0]> = {}) {
  const at = new Date("2026-11-24T10:00:00.123Z");
  return {
    id,
    subscriptionId: "sub_01JZZZZZZZZZZZZZZZZZZZZZZZ",
    kind: "wallet.transfer.broadcasted",
    chainId: "tron:mainnet",
    status: "failed" as const,
    attempts: 3,
    deliveryCount: 0,
    responseStatus: 500,
    responseBody: AWKWARD,
    held: false,
    heldReason: null,
    // As the event is stored: the payload rendered once (deliverer/schema.ts).
    payload: renderPayload(envelope(id, "wallet.transfer.broadcasted", "sub_01JZZZZZZZZZZZZZZZZZZZZZZZ", at, data)),
    createdAt: at,
    ...overrides,
  };
}

const DATA = {
  to: "TNUC9Qb1rRpS5CbWLmNMxXBjyFoydXjWFR",
  from: "TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8",
  txId: "ab".repeat(32),
  memo: AWKWARD,
  asset: { decimals: 6, symbol: "US\"DT\\", type: "fungible", standard: "TRC20", contract: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", tokenId: null },
  amount: "12500000",
  chainId: "tron:mainnet",
  blockNumber: 61132092,
  fee: "0",
  matchedAddresses: [{ chainId: "tron:mainnet", address: "TNUC9Qb1rRpS5CbWLmNMxXBjyFoydXjWFR", role: "to" }],
  "10": "an integer-like key",
  extra: { nested: [1, 2.5, -0, 1e21, null, true, "x"] },
};

describe("event view text", () => {
  const views = [
    toEventView(transferRow("evt_01JZZZZZZZZZZZZZZZZZZZZZZA", DATA)),
    toEventView(transferRow("evt_01JZZZZZZZZZZZZZZZZZZZZZZB", { message: AWKWARD }, { kind: "service.ping", chainId: null, status: "pending", responseStatus: null, responseBody: null, attempts: 0 })),
    toEventView(transferRow("evt_01JZZZZZZZZZZZZZZZZZZZZZZC", DATA, { status: "pending", responseStatus: null, responseBody: null, attempts: 0, held: true, heldReason: "secret_unreadable" })),
  ];

  test("a pending held event shows its reason; any other shows null", () => {
    expect(views.map((e) => JSON.parse(eventJson(e)).heldReason)).toEqual([null, null, "secret_unreadable"]);
    // A reason left on a row that is no longer pending is not shown.
    const done = toEventView(transferRow("evt_01JZZZZZZZZZZZZZZZZZZZZZZD", DATA, { status: "delivered", held: true, heldReason: "key_revoked" }));
    expect(JSON.parse(eventJson(done)).heldReason).toBeNull();
  });

  test("equals JSON.stringify of the view object, byte for byte, and passes EventViewSchema", () => {
    const valid = getSchemaValidator(EventViewSchema);
    for (const e of views) {
      const text = eventJson(e);
      expect(text).toBe(JSON.stringify(viewObject(e)));
      expect(valid!.Check(JSON.parse(text))).toBe(true);
    }
  });

  test("the payload is the text a delivery sends", () => {
    const e = views[0]!;
    expect(e.payloadJson).toBe(renderPayload(envelope(e.id, "wallet.transfer.broadcasted", "sub_01JZZZZZZZZZZZZZZZZZZZZZZZ", new Date("2026-11-24T10:00:00.123Z"), DATA)));
    expect(eventJson(e)).toContain(`"payload":${e.payloadJson},`);
  });

  test("a page, with and without a next page token, equals JSON.stringify of the page object and passes EventPageSchema", () => {
    const valid = getSchemaValidator(EventPageSchema);
    for (const token of ["", 'tok"en\\'] as const) {
      const text = eventPageJson(views, token);
      const page: { items: EventViewJson[]; nextPageToken?: string } = { items: views.map(viewObject) };
      if (token) page.nextPageToken = token;
      expect(text).toBe(JSON.stringify(page));
      expect(valid!.Check(JSON.parse(text))).toBe(true);
    }
    expect(eventPageJson([], "")).toBe('{"items":[]}');
  });

  test("a view without its payload is an internal error, not broken JSON", () => {
    expect(() => eventJson(create(EventViewMessage, { id: "evt_01JZZZZZZZZZZZZZZZZZZZZZZA", payloadJson: "" }))).toThrow();
    expect(() => eventJson(undefined)).toThrow();
  });
});
