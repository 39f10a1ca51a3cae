// An unauthenticated flood cannot take the API down: 20,000 requests with random key-shaped tokens, as fast as one
// client sends them, while /readyz is probed and a valid key keeps working. Lookups of unknown keys are limited per
// client address before they reach the registry (429 with Retry-After, in the error contract), and a refusal is
// answered after its Retry-After, a bounded number at a time per client (gateway/refusal-pace.ts): the flood runs
// past that bound here, or 20,000 requests paced at 64 a second would take minutes. A valid key's latency under
// the flood is the bench's (`bun run bench api-flood`), never a threshold here.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { startStack, type Stack, type TestKey } from "../../support/stack.ts";
import { apiClient, expectError } from "../../support/http.ts";

const FLOOD = 20_000;
/** Requests the flooding client keeps in flight. */
const FLOOD_CONCURRENCY = 64;
/** Refusals the gateway holds per client: below the flood's concurrency, so most of it is answered at once. */
const HELD_PER_CLIENT = 8;

let stack: Stack;
let key: TestKey;

beforeAll(async () => {
  // The production defaults of the unknown-key limit (the stack raises every limit for other tests).
  stack = await startStack({
    env: { UNKNOWN_KEY_RATE_LIMIT_RPS: "10", UNKNOWN_KEY_RATE_LIMIT_BURST: "100" },
    refusalsHeld: { perClient: HELD_PER_CLIENT, total: 1_000 },
  });
  key = await stack.createKey();
}, 60_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

const randomKey = () => "whk_" + randomBytes(32).toString("base64url");

describe("a flood of random key-shaped tokens", () => {
  test("readiness stays 200, a valid key keeps working, nothing answers 5xx, the flood gets 429s", async () => {
    const valid = apiClient(stack.baseUrl, key.key);
    // Known before the flood, as a client in use is.
    expect((await valid.get("/v1/subscriptions")).status).toBe(200);

    const floodStatuses = new Map<number, number>();
    let sample429: Response | undefined;
    let sample429Text = "";
    let sent = 0;
    let flooding = true;
    const flooder = async () => {
      while (sent < FLOOD) {
        sent++;
        const res = await fetch(`${stack.baseUrl}/v1/subscriptions`, { headers: { authorization: `Bearer ${randomKey()}` } });
        const text = await res.text();
        floodStatuses.set(res.status, (floodStatuses.get(res.status) ?? 0) + 1);
        if (res.status === 429 && !sample429) {
          sample429 = res;
          sample429Text = text;
        }
      }
    };

    const readyz: number[] = [];
    const prober = async () => {
      while (flooding) {
        readyz.push((await fetch(`${stack.baseUrl}/readyz`)).status);
        await Bun.sleep(20);
      }
    };
    const validStatuses: number[] = [];
    const user = async () => {
      while (flooding) {
        validStatuses.push((await valid.get("/v1/subscriptions")).status);
        await Bun.sleep(10);
      }
    };

    const background = [prober(), user()];
    await Promise.all(Array.from({ length: FLOOD_CONCURRENCY }, flooder));
    flooding = false;
    await Promise.all(background);

    const summary = (m: Map<number, number>) => [...m].sort(([a], [b]) => a - b).map(([s, n]) => `${s}x${n}`).join(" ");
    const count = (xs: number[]) => {
      const m = new Map<number, number>();
      for (const x of xs) m.set(x, (m.get(x) ?? 0) + 1);
      return summary(m);
    };
    // Nothing but 401 (an unknown key looked up, within the limit) and 429 (refused before any lookup).
    expect(summary(floodStatuses)).toMatch(/^401x\d+ 429x\d+$/);
    // At most the burst and the sustained rate's worth of lookups reached the registry.
    expect(floodStatuses.get(429)!).toBeGreaterThan(FLOOD / 2);
    expect(readyz.length).toBeGreaterThan(0);
    expect(count(readyz)).toBe(`200x${readyz.length}`);
    expect(validStatuses.length).toBeGreaterThan(0);
    expect(count(validStatuses)).toBe(`200x${validStatuses.length}`);

    // The 429 follows the error contract, with Retry-After.
    const retryAfter = Number(sample429!.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    const body = expectError({ status: 429, headers: sample429!.headers, text: sample429Text, json: <T>() => JSON.parse(sample429Text) as T }, 429, "rate_limited");
    expect(body.detail).toEqual({ retryAfterSeconds: retryAfter });
  }, 180_000);

  test("a refusal is answered after its Retry-After, at most the client's bound at a time; the rest at once", async () => {
    // The flood above left this address's budget empty; what refills meanwhile (10 a second) is answered 401.
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 40 }, async () => {
        const res = await fetch(`${stack.baseUrl}/v1/subscriptions`, { headers: { authorization: `Bearer ${randomKey()}` } });
        await res.arrayBuffer();
        return { status: res.status, retryAfter: Number(res.headers.get("retry-after")), ms: performance.now() - started };
      }),
    );
    const refused = answers.filter((a) => a.status === 429);
    expect(answers.every((a) => a.status === 401 || a.status === 429)).toBe(true);
    expect(refused.length).toBeGreaterThan(HELD_PER_CLIENT);
    expect(refused.every((a) => a.retryAfter === 1)).toBe(true);
    // Held: the bound's worth, each answered no sooner than its Retry-After; the others before any of those.
    const held = refused.filter((a) => a.ms >= 1_000);
    expect(held.length).toBe(HELD_PER_CLIENT);
    const atOnce = refused.filter((a) => a.ms < 1_000);
    expect(atOnce.length).toBe(refused.length - HELD_PER_CLIENT);
  }, 60_000);
});
