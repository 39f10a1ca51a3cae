// /metrics is open (no credential), so no label may carry an API key, its id, a subscription id or an event id:
// every metric of the process (gateway, registry, deliverer share one Prometheus registry) is scraped after requests
// that put each of them in paths, bodies and headers, matched and unmatched, and no value of any label holds one.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startStack, TEST_DESTINATION, type Stack, type TestKey } from "../../support/stack.ts";

let stack: Stack;
let key: TestKey;

beforeAll(async () => {
  // The worker stays off: the test events below must not be sent anywhere.
  stack = await startStack({ deliverer: { startWorker: false } });
  key = await stack.createKey();
}, 60_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

const IDS = /\b(?:whk|whsec|key|sub|evt)_[A-Za-z0-9_-]{8,}/;

/** Every label value of every sample in a Prometheus text exposition. */
function labelValues(text: string): string[] {
  const values: string[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    for (const m of line.matchAll(/\w+="((?:[^"\\]|\\.)*)"/g)) values.push(m[1]!);
  }
  return values;
}

test("no metric label carries a key, a key id, a subscription id or an event id", async () => {
  const headers = { authorization: `Bearer ${key.key}`, "content-type": "application/json" };
  const created = await fetch(`${stack.baseUrl}/v1/subscriptions`, {
    method: "POST",
    headers,
    body: JSON.stringify({ destination: { type: "https", url: TEST_DESTINATION }, events: ["service.ping"] }),
  });
  expect(created.status).toBe(201);
  const { id } = (await created.json()) as { id: string };
  const test = await fetch(`${stack.baseUrl}/v1/subscriptions/${id}/test`, { method: "POST", headers, body: "{}" });
  expect(test.status).toBeLessThan(300);
  const { id: eventId } = (await test.json()) as { id: string };
  const paths = [
    `/v1/subscriptions/${id}`,
    `/v1/subscriptions/${id}/events`,
    `/v1/subscriptions/${id}/events/${eventId}`,
    `/v1/subscriptions/${id}/filters/addresses`,
    `/v1/subscriptions/sub_01HZZZZZZZZZZZZZZZZZZZZZZZ`,
    `/v1/subscriptions/${id}/nothing/${key.id}`,
    `/${key.key}`,
    `/v1/${eventId}`,
  ];
  for (const path of paths) await (await fetch(`${stack.baseUrl}${path}`, { headers })).arrayBuffer();
  await (await fetch(`${stack.baseUrl}/v1/subscriptions/${id}`, { method: "PATCH", headers, body: JSON.stringify({ description: key.id }) })).arrayBuffer();

  const text = await (await fetch(`${stack.baseUrl}/metrics`)).text();
  expect(text).toContain("gateway_http_requests_total");
  expect(text).toContain("registry_rpc_calls_total");
  const values = labelValues(text);
  expect(values.length).toBeGreaterThan(0);
  expect(values.filter((v) => IDS.test(v))).toEqual([]);
  expect(text).not.toContain(id);
  expect(text).not.toContain(key.id);
  expect(text).not.toContain(eventId);
});
