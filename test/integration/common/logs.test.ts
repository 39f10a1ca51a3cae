// Secrets (signing secrets, API keys) never reach the logs: everything the services log while the API is used —
// creations, rotations, replays, errors — is captured through common/logger.ts and searched for them.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { setLogLevel, setLogSink, type LogLevel } from "../../../common/logger.ts";
import type { SubscriptionJson } from "../../../gateway/render.ts";
import { apiClient, expectStatus, type ApiResponse } from "../../support/http.ts";
import { startStack, TEST_DESTINATION, type Stack } from "../../support/stack.ts";

let stack: Stack;
const lines: string[] = [];
let restoreSink: ((line: string) => void) | undefined;
let restoreLevel: LogLevel | undefined;

beforeAll(async () => {
  restoreSink = setLogSink((line) => lines.push(line));
  restoreLevel = setLogLevel("debug");
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
  if (restoreLevel) setLogLevel(restoreLevel);
  if (restoreSink) setLogSink(restoreSink);
});

describe("logs", () => {
  test("carry every request (by request id) and never a signing secret or an API key, in any form", async () => {
    const issued = await stack.createKey();
    const api = apiClient(stack.baseUrl, issued.key);
    const secrets: string[] = [issued.key];
    const responses: ApiResponse[] = [];
    const track = (res: ApiResponse) => {
      responses.push(res);
      return res;
    };
    const body = { destination: { type: "https", url: TEST_DESTINATION }, events: ["service.ping"] };

    const created = track(await api.post("/v1/subscriptions", body, { headers: { "idempotency-key": "log-test" } }));
    expectStatus(created, 201);
    const sub = created.json<SubscriptionJson>();
    secrets.push(sub.destination.secret!);
    expectStatus(track(await api.post("/v1/subscriptions", body, { headers: { "idempotency-key": "log-test" } })), 201);

    const given = "whsec_" + Buffer.alloc(40, 9).toString("base64");
    secrets.push(given);
    expectStatus(track(await api.post(`/v1/subscriptions/${sub.id}/secrets/rotate`, { secret: given })), 200);
    const rotated = track(await api.post(`/v1/subscriptions/${sub.id}/secrets/rotate`));
    expectStatus(rotated, 200);
    secrets.push(rotated.json<SubscriptionJson>().destination.secret!);

    // A malformed secret is echoed nowhere either, nor a wrong API key.
    const badSecret = "whsec_" + "A".repeat(10);
    secrets.push(badSecret);
    expect(track(await api.post(`/v1/subscriptions/${sub.id}/secrets/rotate`, { secret: badSecret })).status).toBe(400);
    const wrongKey = "whk_" + "B".repeat(43);
    secrets.push(wrongKey);
    expect(track(await apiClient(stack.baseUrl, wrongKey).get("/v1/subscriptions")).status).toBe(401);

    for (const call of [
      () => api.get(`/v1/subscriptions/${sub.id}`),
      () => api.get("/v1/subscriptions"),
      () => api.put(`/v1/subscriptions/${sub.id}`, body),
      () => api.get("/v1/subscriptions/sub_nope"),
      () => api.post("/v1/subscriptions", "{broken"),
    ]) {
      const res = track(await call());
      expect(res.text).not.toContain("whsec_");
    }
    // Access lines are written once each response has gone out: wait for them, within bounds.
    const ids = responses.map((r) => r.headers.get("x-request-id")!);
    for (let i = 0; i < 100 && !ids.every((id) => lines.some((l) => l.includes(id))); i++) await Bun.sleep(20);

    const logs = lines.join("\n");
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    // The capture works: every request left its access line.
    for (const res of responses) expect(logs).toContain(res.headers.get("x-request-id")!);
    for (const secret of secrets) {
      expect(logs).not.toContain(secret);
      // Not even without its prefix, or its first half.
      const bare = secret.replace(/^(whsec|whk)_/, "");
      expect(logs).not.toContain(bare);
      expect(logs).not.toContain(bare.slice(0, Math.ceil(bare.length / 2)));
    }
  });
});
