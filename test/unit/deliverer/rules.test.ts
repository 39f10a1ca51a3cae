// The deliverer's pure rules: retry delays with jitter and Retry-After bounds, the 4,096-byte UTF-8 cut,
// Retry-After parsing, payload rendering, signing headers, and signatures equal to the `standardwebhooks` library's.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { Webhook } from "standardwebhooks";
import { describeSchedule, nextDelay, parseRetryAfter, parseRetrySchedule, retryAfterOf } from "../../../common/retry-policy.ts";
import { renderPayload } from "../../../deliverer/payload.ts";
import { truncateUtf8 } from "../../../deliverer/send.ts";
import { deliveryHeaders, signatureHeader } from "../../../deliverer/sign.ts";

const DEFAULT = parseRetrySchedule("0,1s,5s,1m,5m,30m,90m");

describe("retry delays", () => {
  test("the default schedule: 7 attempts over about 2 hours", () => {
    expect(DEFAULT).toEqual([0, 1_000, 5_000, 60_000, 300_000, 1_800_000, 5_400_000]);
    const total = DEFAULT.reduce((a, b) => a + b, 0);
    expect(total / 3_600_000).toBeCloseTo(2.1, 1);
  });

  test("each delay is the scheduled one plus at most 10% jitter", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.double({ min: 0, max: 0.999999, noNaN: true }), (n, r) => {
        const d = nextDelay(DEFAULT, n, null, () => r);
        const base = DEFAULT[n]!;
        return d >= base && d <= Math.round(base * 1.1);
      }),
    );
  });

  test("Retry-After is honoured within [scheduled delay, 2× scheduled delay]", () => {
    const base = DEFAULT[3]!; // 1 min
    expect(nextDelay(DEFAULT, 3, 10, () => 0)).toBe(base);
    expect(nextDelay(DEFAULT, 3, 90_000, () => 0)).toBe(90_000);
    expect(nextDelay(DEFAULT, 3, 3_600_000, () => 0)).toBe(2 * base);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 0, max: 100_000_000 }), fc.double({ min: 0, max: 0.999999, noNaN: true }), (n, ra, r) => {
        const d = nextDelay(DEFAULT, n, ra, () => r);
        return d >= DEFAULT[n]! && d <= 2 * DEFAULT[n]!;
      }),
    );
  });

  test("only 429 and 503 carry a Retry-After", () => {
    expect(retryAfterOf(429, "7")).toBe(7_000);
    expect(retryAfterOf(503, "7")).toBe(7_000);
    expect(retryAfterOf(500, "7")).toBeNull();
    expect(retryAfterOf(302, "7")).toBeNull();
  });

  test("the schedule in words, as the OpenAPI description states it", () => {
    expect(describeSchedule(DEFAULT)).toBe("at once, 1 s, 5 s, 1 min, 5 min, 30 min and 90 min");
    expect(describeSchedule(parseRetrySchedule("250ms,3h"))).toBe("250 ms and 3 h");
  });

  test("Retry-After: seconds or an HTTP date", () => {
    expect(parseRetryAfter("120")).toBe(120_000);
    expect(parseRetryAfter(null)).toBeNull();
    expect(parseRetryAfter("soon")).toBeNull();
    const now = Date.parse("2026-11-22T00:00:00Z");
    expect(parseRetryAfter("Sun, 22 Nov 2026 00:00:30 GMT", now)).toBe(30_000);
  });
});

describe("response body cut", () => {
  test("at most 4,096 bytes, never inside a character, a prefix of the original", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 3_000 }), (s) => {
        const bytes = new TextEncoder().encode(s);
        const cut = truncateUtf8(bytes);
        const cutBytes = new TextEncoder().encode(cut);
        return cutBytes.length <= 4096 && s.startsWith(cut) && !cut.includes("\uFFFD") && (bytes.length <= 4096 ? cut === s : cutBytes.length > 4092);
      }),
    );
  });
});

describe("payload and headers", () => {
  test("the envelope renders in the contract's order, identically every time", () => {
    const stored = { subscriptionId: "sub_X", data: { message: "hi" }, kind: "service.ping", id: "evt_X", date: "2026-01-01T00:00:00.000Z" };
    const body = renderPayload(stored);
    expect(body).toBe('{"id":"evt_X","kind":"service.ping","date":"2026-01-01T00:00:00.000Z","subscriptionId":"sub_X","data":{"message":"hi"}}');
    expect(renderPayload(JSON.parse(body))).toBe(body);
  });

  test("a transfer's data and asset render in the contract's order, unknown keys after the known ones", () => {
    // As jsonb gives it back: keys shortest first, the contract's order lost.
    const stored = {
      id: "evt_X", data: { to: "TB", fee: "0", txId: "ab", from: "TA", asset: { type: "native", symbol: "TRX", extra: 1, decimals: 6, standard: "TRX" }, later: true, amount: "5", chainId: "tron:nile" },
      date: "2026-01-01T00:00:00.000Z", kind: "wallet.transfer.broadcasted", other: 1, subscriptionId: "sub_X",
    };
    expect(renderPayload(stored)).toBe(
      '{"id":"evt_X","kind":"wallet.transfer.broadcasted","date":"2026-01-01T00:00:00.000Z","subscriptionId":"sub_X","data":' +
        '{"chainId":"tron:nile","txId":"ab","from":"TA","to":"TB","amount":"5","asset":{"type":"native","standard":"TRX","symbol":"TRX","decimals":6,"extra":1},"fee":"0","later":true},"other":1}',
    );
    // Without an asset the data keeps its other keys in order; a payload without data still has one.
    expect(renderPayload({ data: { txId: "ab", asset: null, chainId: "c" }, id: "e" })).toBe('{"id":"e","data":{"chainId":"c","txId":"ab","asset":null}}');
    expect(renderPayload({ id: "e" })).toBe('{"id":"e","data":{}}');
  });

  test("an activity's data renders in its family's order, its nested objects in theirs", () => {
    const keys = [{ weight: 1, address: "TA" }];
    const stored = {
      kind: "wallet.permission.confirmed", id: "evt_X",
      data: {
        fee: "100000000", txId: "ab", owner: { keys, threshold: 1 }, witness: null, backfill: null, address: "TA", chainId: "tron:mainnet",
        actives: [{ keys, operations: "7fff", threshold: 1, name: "active" }], solidifiedBlockNumber: 20, matchedAddresses: [],
      },
    };
    expect(renderPayload(stored)).toBe(
      '{"id":"evt_X","kind":"wallet.permission.confirmed","data":{"chainId":"tron:mainnet","txId":"ab","address":"TA",' +
        '"owner":{"threshold":1,"keys":[{"address":"TA","weight":1}]},"witness":null,' +
        '"actives":[{"name":"active","threshold":1,"operations":"7fff","keys":[{"address":"TA","weight":1}]}],' +
        '"fee":"100000000","solidifiedBlockNumber":20,"matchedAddresses":[],"backfill":null}}',
    );
    // An approval's asset and a vote's entries too; a transfer kind's own keys are not an activity's.
    const approval = { kind: "wallet.approval.broadcasted", data: { asset: { decimals: 6, type: "fungible" }, amount: "1", owner: "TA", unlimited: false, from: "TB" } };
    expect(renderPayload(approval)).toBe('{"kind":"wallet.approval.broadcasted","data":{"owner":"TA","amount":"1","unlimited":false,"asset":{"type":"fungible","decimals":6},"from":"TB"}}');
    const vote = { kind: "wallet.resource.broadcasted", data: { votes: [{ count: 5, address: "TW" }], type: "vote" } };
    expect(renderPayload(vote)).toBe('{"kind":"wallet.resource.broadcasted","data":{"type":"vote","votes":[{"address":"TW","count":5}]}}');
  });

  test("headers carry the event id, timestamp and one signature per secret, newest first", () => {
    const newer = "whsec_" + Buffer.alloc(32, 1).toString("base64");
    const older = "whsec_" + Buffer.alloc(32, 2).toString("base64");
    const at = new Date("2026-11-22T02:26:03.123Z");
    const h = deliveryHeaders({ eventId: "evt_01", subscriptionId: "sub_01", secrets: [newer, older], body: "{}", at });
    expect(h["webhook-id"]).toBe("evt_01");
    expect(h["webhook-timestamp"]).toBe(String(Math.floor(at.getTime() / 1000)));
    expect(h["webhook-signature"]).toBe(`${new Webhook(newer).sign("evt_01", at, "{}")} ${new Webhook(older).sign("evt_01", at, "{}")}`);
    expect(h["x-subscription-id"]).toBe("sub_01");
    expect(h["content-type"]).toBe("application/json");
  });

  // sign.ts hashes with node:crypto instead of the library's pure-JS HMAC: the library stays the reference.
  test("signatures equal the standardwebhooks library's, and the library verifies them", () => {
    const secret = fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => "whsec_" + Buffer.from(b).toString("base64"));
    // Unicode bodies, lone surrogates included (both sides encode them as U+FFFD), and ids with dots.
    const body = fc.oneof(fc.string({ unit: "grapheme" }), fc.string({ unit: "binary" }), fc.json());
    const id = fc.oneof(fc.constant("evt_01JDX4R8B2C3D4E5F6G7H8J9KA"), fc.string({ minLength: 1, unit: "grapheme-ascii" }));
    const at = fc.integer({ min: 0, max: 4_102_444_800_000 }).map((ms) => new Date(ms));
    fc.assert(
      fc.property(fc.array(secret, { minLength: 1, maxLength: 3 }), id, at, body, (secrets, eventId, when, payload) => {
        const header = signatureHeader(secrets, eventId, when, payload);
        expect(header).toBe(secrets.map((s) => new Webhook(s).sign(eventId, when, payload)).join(" "));
      }),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(secret, id, body, (s, eventId, payload) => {
        const h = deliveryHeaders({ eventId, subscriptionId: "sub_01", secrets: [s], body: payload, at: new Date() });
        // jsonParse off: the bodies here need not be JSON.
        expect(() => new Webhook(s).verify(payload, h, { jsonParse: false })).not.toThrow();
      }),
      { numRuns: 200 },
    );
  });

  test("a secret that is not canonical base64 signs as the library does (or fails as it does)", () => {
    for (const s of ["whsec_AAA", "AAAA", "whsec_QUJD", "whsec_", "whsec_!!!!"]) {
      let ours: string | Error;
      let theirs: string | Error;
      try {
        ours = signatureHeader([s], "evt_1", new Date(0), "{}");
      } catch (err) {
        ours = err as Error;
      }
      try {
        theirs = new Webhook(s).sign("evt_1", new Date(0), "{}");
      } catch (err) {
        theirs = err as Error;
      }
      if (typeof theirs === "string") expect(ours).toBe(theirs);
      else expect(ours).toBeInstanceOf(Error);
    }
  });
});
