// Deliveries verify with `standardwebhooks` and with `svix` (an independent implementation), before and after a
// secret rotation, with a grace period (two signatures, new first) and without one (the old secret stops at once).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Webhook as StandardWebhook } from "standardwebhooks";
import { Webhook as SvixWebhook } from "svix";
import { startDeliveryBed, waitForEvent, type DeliveryBed } from "../../support/delivery.ts";
import type { ReceivedDelivery } from "../../../tools/receiver/server.ts";

let bed: DeliveryBed;

beforeAll(async () => {
  // No target caching: each delivery sees the secrets the registry holds right now.
  bed = await startDeliveryBed({ delivererDeps: { targetTtlMs: 0 } });
}, 60_000);

afterAll(async () => {
  await bed?.stop();
}, 60_000);

function verifiesWith(secret: string, d: ReceivedDelivery): { standard: boolean; svix: boolean } {
  const attempt = (fn: () => unknown) => {
    try {
      fn();
      return true;
    } catch {
      return false;
    }
  };
  return {
    standard: attempt(() => new StandardWebhook(secret).verify(d.body, d.headers)),
    svix: attempt(() => new SvixWebhook(secret).verify(d.body, d.headers)),
  };
}

async function deliverOne(sub: { keyId: string; subscriptionId: string }, path: string): Promise<ReceivedDelivery> {
  const before = bed.receiver.count(path);
  const res = await bed.delivery.createTestEvent({ ...sub, kind: "wallet.transfer.broadcasted" });
  await bed.receiver.waitForCount(path, before + 1);
  await waitForEvent(bed, { ...sub, eventId: res.event!.id }, (e) => e.status === "delivered");
  const d = bed.receiver.deliveries(path).at(-1)!;
  expect(d.headers["webhook-id"]).toBe(res.event!.id);
  return d;
}

describe("signatures", () => {
  test("headers and body follow the contract, and both libraries verify", async () => {
    const sub = await bed.subscribe("/sig-basic");
    const d = await deliverOne(sub, "/sig-basic");
    expect(d.headers["content-type"]).toBe("application/json");
    expect(d.headers["user-agent"]).toMatch(/^tron-webhooks\//);
    expect(d.headers["x-subscription-id"]).toBe(sub.subscriptionId);
    expect(d.headers["webhook-timestamp"]).toMatch(/^\d+$/);
    expect(Math.abs(Number(d.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(30);
    expect(d.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(verifiesWith(sub.secret, d)).toEqual({ standard: true, svix: true });
    const body = JSON.parse(d.body);
    expect(Object.keys(body)).toEqual(["id", "kind", "date", "subscriptionId", "data"]);
    expect(body.kind).toBe("wallet.transfer.broadcasted");
    expect(body.subscriptionId).toBe(sub.subscriptionId);
    expect(body.data.test).toBe(true);
    expect(body.data.chainId).toBe("tron:mainnet");
    // A tampered body fails with both.
    expect(verifiesWith(sub.secret, { ...d, body: d.body.replace("USDT", "USDC") })).toEqual({ standard: false, svix: false });
  });

  test("rotation with a grace period: two signatures, new first; old and new secrets both verify", async () => {
    const sub = await bed.subscribe("/sig-grace");
    const rotated = await bed.subscriptions.rotateSecret({ keyId: sub.keyId, id: sub.subscriptionId, gracePeriodSeconds: 3600, secret: "" });
    const fresh = rotated.subscription!.destination!.secret;
    expect(fresh).not.toBe(sub.secret);
    const d = await deliverOne(sub, "/sig-grace");
    const sigs = d.headers["webhook-signature"]!.split(" ");
    expect(sigs.length).toBe(2);
    const ts = new Date(Number(d.headers["webhook-timestamp"]) * 1000);
    expect(sigs[0]).toBe(new StandardWebhook(fresh).sign(d.headers["webhook-id"]!, ts, d.body));
    expect(sigs[1]).toBe(new StandardWebhook(sub.secret).sign(d.headers["webhook-id"]!, ts, d.body));
    expect(verifiesWith(fresh, d)).toEqual({ standard: true, svix: true });
    expect(verifiesWith(sub.secret, d)).toEqual({ standard: true, svix: true });
  });

  test("rotation without grace: only the new secret signs, the old one no longer verifies", async () => {
    const sub = await bed.subscribe("/sig-cut");
    const first = await deliverOne(sub, "/sig-cut");
    expect(verifiesWith(sub.secret, first)).toEqual({ standard: true, svix: true });
    const rotated = await bed.subscriptions.rotateSecret({ keyId: sub.keyId, id: sub.subscriptionId, gracePeriodSeconds: 0, secret: "" });
    const fresh = rotated.subscription!.destination!.secret;
    const d = await deliverOne(sub, "/sig-cut");
    expect(d.headers["webhook-signature"]!.split(" ").length).toBe(1);
    expect(verifiesWith(fresh, d)).toEqual({ standard: true, svix: true });
    expect(verifiesWith(sub.secret, d)).toEqual({ standard: false, svix: false });
  });

  test("a second rotation during a grace period: at most two secrets sign, the oldest is gone", async () => {
    const sub = await bed.subscribe("/sig-twice");
    const r1 = await bed.subscriptions.rotateSecret({ keyId: sub.keyId, id: sub.subscriptionId, gracePeriodSeconds: 3600, secret: "" });
    const r2 = await bed.subscriptions.rotateSecret({ keyId: sub.keyId, id: sub.subscriptionId, gracePeriodSeconds: 3600, secret: "" });
    const s1 = r1.subscription!.destination!.secret;
    const s2 = r2.subscription!.destination!.secret;
    const d = await deliverOne(sub, "/sig-twice");
    expect(d.headers["webhook-signature"]!.split(" ").length).toBe(2);
    expect(verifiesWith(s2, d)).toEqual({ standard: true, svix: true });
    expect(verifiesWith(s1, d)).toEqual({ standard: true, svix: true });
    expect(verifiesWith(sub.secret, d)).toEqual({ standard: false, svix: false });
  });
});
