// The generated client's hand-written parts: the webhook verifier against the deliverer's real signatures (fetch and
// node:http header shapes, a rotation's two secrets, tampering, a stale timestamp), and unwrap's errors.
import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { signatureHeader } from "../../../deliverer/sign.ts";
import { EXAMPLE_PAYLOADS } from "../../../gateway/event-catalog.ts";
import { ApiError, createTronWebhooksClient, unwrap } from "../../../clients/typescript/src/index.ts";
import { verifyWebhook, WebhookVerificationError, WebhookVerifier } from "../../../clients/typescript/src/webhooks.ts";

const secret = () => `whsec_${randomBytes(32).toString("base64")}`;
const payload = EXAMPLE_PAYLOADS["wallet.transfer.confirmed"];
const body = JSON.stringify(payload);

function headers(secrets: string[], at = new Date(), signed = body): Record<string, string> {
  return {
    "webhook-id": payload.id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": signatureHeader(secrets, payload.id, at, signed),
  };
}

describe("WebhookVerifier", () => {
  test("a delivery signed by the deliverer verifies, and gives its typed event", () => {
    const s = secret();
    const event = verifyWebhook(body, headers([s]), s);
    expect(event as unknown).toEqual(payload);
    if (event.kind !== "wallet.transfer.confirmed") throw new Error(`kind ${event.kind}`);
    expect(event.data.solidifiedBlockNumber).toBe(payload.data.solidifiedBlockNumber);
  });

  test("headers as fetch gives them and as node:http gives them (any case, arrays)", () => {
    const s = secret();
    const h = headers([s]);
    const verifier = new WebhookVerifier(s);
    expect(verifier.verifies(body, new Headers(h))).toBe(true);
    const upper = Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toUpperCase(), [v]]));
    expect(verifier.verifies(body, upper)).toBe(true);
  });

  test("during a rotation either secret verifies; a receiver may hold both", () => {
    const [previous, next, other] = [secret(), secret(), secret()];
    // The deliverer signs with both while the previous secret is in its grace period.
    expect(new WebhookVerifier(previous).verifies(body, headers([next, previous]))).toBe(true);
    expect(new WebhookVerifier([other, next]).verifies(body, headers([next]))).toBe(true);
    expect(new WebhookVerifier([other]).verifies(body, headers([next]))).toBe(false);
    expect(() => new WebhookVerifier([])).toThrow();
  });

  test("a changed body, a wrong secret or a stale timestamp fails with the library's error", () => {
    const s = secret();
    const verifier = new WebhookVerifier(s);
    expect(() => verifier.verify(body.replace(payload.data.amount, "1"), headers([s]))).toThrow(WebhookVerificationError);
    expect(() => verifier.verify(body, headers([secret()]))).toThrow(WebhookVerificationError);
    expect(() => verifier.verify(body, headers([s], new Date(Date.now() - 10 * 60_000)))).toThrow(WebhookVerificationError);
  });
});

describe("unwrap", () => {
  const answering = (response: Response) => createTronWebhooksClient({ baseUrl: "http://127.0.0.1:9", apiKey: "whk_test", fetch: async () => response });

  test("the data of a 2xx answer; the API's error body as an ApiError", async () => {
    const ok = answering(Response.json({ items: [] }));
    expect(await unwrap(ok.GET("/v1/subscriptions"))).toEqual({ items: [] });
    const body = { error: "not_found", message: "No such subscription.", detail: null, requestId: "req_1" };
    const missing = answering(Response.json(body, { status: 404 }));
    const err = await unwrap(missing.GET("/v1/subscriptions/{id}", { params: { path: { id: "sub_x" } } })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 404, code: "not_found", message: body.message, requestId: "req_1" });
  });

  test("a body that is not the API's (a proxy's page) gives the status and its text", async () => {
    const proxy = answering(new Response("<html>bad gateway</html>", { status: 502, statusText: "Bad Gateway" }));
    const err = (await unwrap(proxy.GET("/v1/subscriptions")).catch((e: unknown) => e)) as ApiError;
    expect([err.status, err.code, err.message, err.detail]).toEqual([502, "502", "Bad Gateway", null]);
  });

  test("the key goes as a bearer token, read on every request when given as a function", async () => {
    const seen: (string | null)[] = [];
    let key: string | null = "whk_one";
    const client = createTronWebhooksClient({
      baseUrl: "http://127.0.0.1:9",
      apiKey: () => key,
      fetch: async (request) => {
        seen.push(request.headers.get("authorization"));
        return Response.json({ items: [] });
      },
    });
    await client.GET("/v1/subscriptions");
    key = null;
    await client.GET("/v1/subscriptions");
    expect(seen).toEqual(["Bearer whk_one", null]);
  });
});
