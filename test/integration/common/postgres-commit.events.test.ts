// A 503 means nothing changed for the deliverer's writes too (common/db.ts writeTransaction): ~80 test events are
// under way when the connection to PostgreSQL stops moving bytes for longer than the deadlines, then resumes. Every
// test event answered 503 must have left no event, and every 200 must have its event; one whose COMMIT was in flight
// is answered with its real outcome, however late.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { call, startEventsStack, type EventsStack, type HttpResult } from "../../support/events.ts";
import { startTcpProxy, type TcpProxy } from "../../support/tcp-proxy.ts";

let proxy: TcpProxy;
let env: EventsStack;
let key: string;

beforeAll(async () => {
  proxy = await startTcpProxy();
  // The key stays cached in the gateway and the delivery targets in the deliverer through the freeze, so the test
  // events that passed the ownership check reach the deliverer's write path.
  env = await startEventsStack({ databasePort: proxy.port, authCacheMs: 60_000, deliverer: { targetTtlMs: 60_000 } });
  key = (await env.stack.createKey()).key;
}, 60_000);
afterAll(async () => {
  await env?.stop();
  await proxy?.close();
}, 60_000);

test("PostgreSQL frozen under ~80 test events: every 503 left no event, every 200 has its event", async () => {
  const base = env.stack.baseUrl;
  const N = 80;
  const subs: string[] = [];
  for (let i = 0; i < N; i++) {
    const res = await call<{ id: string }>(base, key, "POST", "/v1/subscriptions", {
      destination: { type: "https", url: env.receiver.url(`/freeze-${i}`) },
      events: ["service.ping"],
    });
    expect(res.status).toBe(201);
    subs.push(res.body.id);
  }
  const answers: Promise<HttpResult<{ id: string }>>[] = [];
  for (let i = 0; i < N; i++) {
    // Half with an Idempotency-Key (record and event in one transaction), half without (the event alone).
    const headers: Record<string, string> = i % 2 === 0 ? { "idempotency-key": `freeze-${i}` } : {};
    answers.push(call<{ id: string }>(base, key, "POST", `/v1/subscriptions/${subs[i]}/test`, {}, headers));
    await Bun.sleep(4);
    if (i === N / 2) proxy.freeze();
  }
  // Frozen well past the 4 s store deadline and the gateway's 4.5 s, then back.
  await Bun.sleep(6_000);
  await proxy.restore();
  const results = await Promise.all(answers);
  // Let every abandoned transaction finish (roll back) now that PostgreSQL answers again.
  await Bun.sleep(1_000);
  const sql = env.stack.deliverer!.store.db.$client;
  const rows = (await sql`SELECT id, subscription_id FROM events WHERE subscription_id IN ${sql(subs)}`) as { id: string; subscription_id: string }[];
  const stored = new Map<string, string[]>();
  for (const r of rows) stored.set(r.subscription_id, [...(stored.get(r.subscription_id) ?? []), r.id]);
  const lies: string[] = [];
  for (const [i, res] of results.entries()) {
    const events = stored.get(subs[i]!) ?? [];
    if (res.status === 200) {
      if (events.length !== 1 || events[0] !== res.body.id) lies.push(`#${i} answered 200 ${res.body.id} but stored ${JSON.stringify(events)}`);
    } else if (res.status === 503) {
      if (events.length > 0) lies.push(`#${i} answered 503 but stored ${JSON.stringify(events)}`);
    } else {
      lies.push(`#${i} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 200)}`);
    }
  }
  expect(lies).toEqual([]);
  // The freeze did cut test events off (else this test proves nothing), and those before it went through.
  expect(results.filter((r) => r.status === 503).length).toBeGreaterThan(0);
  expect(results.filter((r) => r.status === 200).length).toBeGreaterThan(0);
}, 90_000);
