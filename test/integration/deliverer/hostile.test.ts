// Hostile destinations end as docs/CONTRACT.md "Events and delivery" says. Real PostgreSQL, Redis, registry and a real
// HTTPS receiver (test CA via DELIVERY_CA_FILE); only the schedule and the timeout are shortened.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { staticResolver } from "../../../common/ssrf.ts";
import { startReceiver, type Receiver } from "../../../tools/receiver/server.ts";
import { startDeliveryBed, waitForEvent, type DeliveryBed } from "../../support/delivery.ts";

const TIMEOUT_MS = 1_000;
let bed: DeliveryBed;
let rogue: Receiver;

beforeAll(async () => {
  bed = await startDeliveryBed({
    env: { DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS), RETRY_SCHEDULE: "0,50ms,50ms,50ms,50ms,50ms,50ms" },
    // Public when the subscription is created...
    registryResolver: staticResolver({ "rebind.example": ["93.184.216.34"], "other-name.example": ["93.184.216.35"] }),
    // ...private (or someone else's name) when the deliverer resolves it for an attempt.
    delivererResolver: staticResolver({ "rebind.example": ["10.0.0.7"], "other-name.example": ["127.0.0.1"] }),
  });
  rogue = await startReceiver({ cert: bed.pki.untrustedCert, key: bed.pki.untrustedKey });
}, 60_000);

afterAll(async () => {
  await rogue?.close();
  await bed?.stop();
}, 60_000);

async function fire(path: string, url?: string) {
  const sub = await bed.subscribe(path, url ? { url } : {});
  const res = await bed.delivery.createTestEvent({ keyId: sub.keyId, subscriptionId: sub.subscriptionId, kind: "" });
  return { ...sub, eventId: res.event!.id };
}

const finished = (e: { status: string }) => e.status !== "pending";

describe("each hostile receiver ends as the contract says", () => {
  test("500 on every attempt: 7 attempts, then failed; the same webhook-id on each", async () => {
    bed.receiver.setBehaviour("/h500", { kind: "status", status: 500, body: "internal trouble" });
    const ref = await fire("/h500");
    const e = await waitForEvent(bed, ref, finished);
    expect(e.status).toBe("failed");
    expect(e.attempts).toBe(7);
    expect(e.deliveryCount).toBe(0);
    expect(e.responseStatus).toBe(500);
    expect(e.responseBody).toBe("internal trouble");
    const got = bed.receiver.deliveries("/h500");
    expect(got.length).toBe(7);
    expect(new Set(got.map((d) => d.headers["webhook-id"]))).toEqual(new Set([ref.eventId]));
    expect(got.every((d) => d.verified === true)).toBe(true);
  });

  test("a body PostgreSQL's text cannot hold (NUL) or that quotes, escapes and braces: recorded, the event delivered once", async () => {
    bed.receiver.setBehaviour("/nul", { kind: "status", status: 200, body: 'ok\u0000 "quoted" \\ {a,b} NULL \u00e9' });
    const ref = await fire("/nul");
    const e = await waitForEvent(bed, ref, finished);
    expect(e.status).toBe("delivered");
    expect(e.attempts).toBe(1);
    // The NUL becomes U+FFFD, everything else stays as the destination sent it.
    expect(e.responseBody).toBe('ok\ufffd "quoted" \\ {a,b} NULL \u00e9');
    expect(bed.receiver.count("/nul")).toBe(1);
  });

  test("a destination that never answers: each attempt times out, responseStatus null with a reason", async () => {
    bed.receiver.setBehaviour("/hang", { kind: "hang" });
    const ref = await fire("/hang");
    const e = await waitForEvent(bed, ref, finished, 7 * TIMEOUT_MS + 15_000);
    expect(e.status).toBe("failed");
    expect(e.attempts).toBe(7);
    expect(e.responseStatus).toBeUndefined();
    expect(e.responseBody).toMatch(/^timeout/);
    expect(bed.receiver.count("/hang")).toBe(7);
  }, 40_000);

  test("a connection reset is a failed attempt without a status", async () => {
    bed.receiver.setBehaviour("/reset", { kind: "reset" });
    const ref = await fire("/reset");
    const e = await waitForEvent(bed, ref, finished);
    expect(e.status).toBe("failed");
    expect(e.attempts).toBe(7);
    expect(e.responseStatus).toBeUndefined();
    expect(e.responseBody).toContain("reset");
    // Each attempt sent it twice: once more at once on a new connection, in case the first had found a closed one.
    expect(bed.receiver.count("/reset")).toBe(14);
  });

  test("a kept-alive connection the destination closed as the request came: sent again at once on a new one, one attempt", async () => {
    // A delivery first, so that the sender holds a kept-alive connection to the receiver.
    const warm = await fire("/warm");
    expect((await waitForEvent(bed, warm, finished)).status).toBe("delivered");
    bed.receiver.setBehaviour("/stale", { kind: "resetReused" });
    for (let i = 0; i < 3; i++) {
      const ref = await fire("/stale");
      const e = await waitForEvent(bed, ref, finished);
      expect(e.status).toBe("delivered");
      expect(e.attempts).toBe(1);
    }
    // At least one request went out on a reused connection and was cut; each was sent again within its attempt.
    expect(bed.receiver.count("/stale")).toBeGreaterThan(3);
  });

  test("a body that trickles past the deadline is a timeout even after a 200 status line", async () => {
    bed.receiver.setBehaviour("/slow", { kind: "slowBody", intervalMs: 200 });
    const ref = await fire("/slow");
    const e = await waitForEvent(bed, ref, (v) => v.attempts >= 1, 10_000);
    expect(e.deliveryCount).toBe(0);
    expect(e.responseStatus).toBeUndefined();
    expect(e.responseBody).toMatch(/^timeout/);
    const done = await waitForEvent(bed, ref, finished, 7 * TIMEOUT_MS + 15_000);
    expect(done.status).toBe("failed");
  }, 40_000);

  test("a redirect is not followed: 3xx is a failed attempt", async () => {
    bed.receiver.setBehaviour("/redirect", { kind: "redirect", status: 302, location: bed.receiver.url("/redirect-target") });
    const ref = await fire("/redirect");
    const e = await waitForEvent(bed, ref, finished);
    expect(e.status).toBe("failed");
    expect(e.responseStatus).toBe(302);
    expect(bed.receiver.count("/redirect")).toBe(7);
    expect(bed.receiver.count("/redirect-target")).toBe(0);
  });

  test("a certificate from an untrusted CA fails the attempt (TLS), nothing is sent", async () => {
    const ref = await fire("/rogue", rogue.url("/rogue"));
    const e = await waitForEvent(bed, ref, finished);
    expect(e.status).toBe("failed");
    expect(e.responseStatus).toBeUndefined();
    expect(e.responseBody).toMatch(/^TLS error/);
    expect(rogue.count()).toBe(0);
  });

  test("DNS rebinding: public at creation, private at delivery → blocked on every attempt, nothing sent", async () => {
    const ref = await fire("/rebind", `https://rebind.example:${bed.receiver.port}/rebind`);
    const e = await waitForEvent(bed, ref, finished);
    expect(e.status).toBe("failed");
    expect(e.attempts).toBe(7);
    expect(e.responseStatus).toBeUndefined();
    expect(e.responseBody).toBe("ssrf_blocked: 10.0.0.7 is in 10.0.0.0/8");
    expect(bed.receiver.count("/rebind")).toBe(0);
  });

  test("the certificate is checked against the host name, not the pinned address", async () => {
    // other-name.example resolves (at delivery) to the receiver's address, whose certificate names only localhost.
    const ref = await fire("/othername", `https://other-name.example:${bed.receiver.port}/othername`);
    const e = await waitForEvent(bed, ref, finished);
    expect(e.status).toBe("failed");
    expect(e.responseBody).toMatch(/^TLS error/);
    expect(bed.receiver.count("/othername")).toBe(0);
  });

  test("the stored response body is cut at 4,096 bytes on a UTF-8 character boundary", async () => {
    bed.receiver.setBehaviour("/euro", { kind: "status", status: 400, body: "€".repeat(3000) });
    const ref = await fire("/euro");
    const e = await waitForEvent(bed, ref, (v) => v.attempts >= 1);
    expect(e.responseStatus).toBe(400);
    // 1,365 whole characters of 3 bytes: the 1,366th would straddle byte 4,096.
    expect(Buffer.byteLength(e.responseBody!, "utf8")).toBe(4095);
    expect(e.responseBody).toBe("€".repeat(1365));
  });
});

describe("a 10 MB answer is never buffered", () => {
  test("delivered, the first 4,096 bytes kept, process memory bounded", async () => {
    bed.receiver.setBehaviour("/huge", { kind: "bigBody", bytes: 10 * 1024 * 1024 });
    const sub = await bed.subscribe("/huge");
    Bun.gc(true);
    const before = process.memoryUsage().rss;
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      ids.push((await bed.delivery.createTestEvent({ keyId: sub.keyId, subscriptionId: sub.subscriptionId, kind: "" })).event!.id);
    }
    for (const eventId of ids) {
      const e = await waitForEvent(bed, { ...sub, eventId }, finished);
      expect(e.status).toBe("delivered");
      expect(e.responseStatus).toBe(200);
      expect(e.responseBody).toBe("y".repeat(4096));
    }
    Bun.gc(true);
    const grownMb = (process.memoryUsage().rss - before) / 2 ** 20;
    // 12 answers of 10 MB buffered would be 120 MB; reading stops after 4 KiB each.
    expect(grownMb).toBeLessThan(60);
  });
});
