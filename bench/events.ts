// `bun run bench events`: GET /v1/events with a txId or an address filter on a large events table, p99 through HTTP
// beside a primary-key lookup (GET one event) measured in the same run; then recover of 100,000 failed events: the
// time to re-queue them and the API's p99 while it runs against its idle p99. Rows are made with one
// INSERT … SELECT generate_series (BENCH_EVENTS, default 10,000,000; the time it took is printed). The deliverer's
// worker does not run, so nothing is sent anywhere. BENCH_SECONDS sets each load phase (default 10 s).
// Targets: filtered p99 ≤ 20 ms; recover ≤ 30 s; API p99 during recover ≤ 2× idle.
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import { setLogLevel } from "../common/logger.ts";
import { startStack } from "../test/support/stack.ts";
import type { LoadResult, LoadSpec } from "./load-generator.ts";

const CONCURRENCY = 16;
const RECOVER_EVENTS = 100_000;

async function load(spec: LoadSpec): Promise<LoadResult> {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "load-generator.ts"), JSON.stringify(spec)], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(child.stdout).text();
  if ((await child.exited) !== 0) throw new Error(`load generator failed: ${out}`);
  return JSON.parse(out.trim().split("\n").at(-1)!) as LoadResult;
}

function line(label: string, r: LoadResult, target = ""): string {
  return `${label.padEnd(40)} p50 ${r.p50Ms.toFixed(1).padStart(6)} ms   p99 ${r.p99Ms.toFixed(1).padStart(6)} ms   ${Math.round(r.rps)} req/s, ${r.errors} errors${r.firstError ? ` (${r.firstError})` : ""}   ${target}`;
}

export default async function main(): Promise<void> {
  setLogLevel("warn");
  const total = Number(process.env.BENCH_EVENTS ?? 10_000_000);
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  console.log(`events bench: ${total} events; ${cpus().length} cores, load ${loadavg()[0]!.toFixed(1)} (a shared machine)`);
  // No deliveries in a benchmark: the deliverer serves its RPCs without a worker.
  const stack = await startStack({ deliverer: { startWorker: false }, env: { RATE_LIMIT_RPS: "1000000", RATE_LIMIT_BURST: "1000000" } });
  // 100,000 at 10,000,000 events; a smaller run recovers what its 1 % share holds.
  const recoverEvents = Math.min(RECOVER_EVENTS, Math.floor(total / 100));
  const db = new SQL(stack.database.url, { max: 2 });
  try {
    const { key, id: keyId } = await stack.createKey();
    const auth = { authorization: `Bearer ${key}` };
    const created = await fetch(`${stack.baseUrl}/v1/subscriptions`, {
      method: "POST", headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ destination: { type: "https", url: "https://hooks.example.com/webhooks" }, events: ["wallet.transfer.broadcasted"] }),
    });
    const sub = ((await created.json()) as { id: string }).id;
    // 1 event in 100 is the benchmark key's (the rest spread over 999 other keys); the newest RECOVER_EVENTS of its
    // events are failed, the rest delivered.
    const started = performance.now();
    await db.unsafe(`
      INSERT INTO events (id, subscription_id, key_id, addresses, kind, chain_id, tx_id, log_index, payload, status, created_at, updated_at)
      SELECT 'evt_' || lpad(upper(to_hex(g)), 26, '0'),
        CASE WHEN g % 100 = 0 THEN '${sub}' ELSE 'sub_O' || (g % 1000) END,
        CASE WHEN g % 100 = 0 THEN '${keyId}' ELSE 'key_O' || (g % 999) END,
        ARRAY['TF' || (g % 1000003), 'TT' || g], 'wallet.transfer.broadcasted', 'tron:mainnet', md5(g::text), 0,
        '{"id":"x","kind":"wallet.transfer.broadcasted","data":{}}'::jsonb,
        CASE WHEN g % 100 = 0 AND g > ${total} - ${recoverEvents * 100} THEN 'failed' ELSE 'delivered' END,
        now() - (${total} - g) * interval '10 ms', now()
      FROM generate_series(1, ${total}) g`);
    await db.unsafe("ANALYZE events");
    console.log(`generated ${total} events in ${((performance.now() - started) / 1000).toFixed(1)} s (one INSERT … SELECT generate_series, all indexes in place)`);

    const g = total - (total % 100);
    const [probe] = (await db`SELECT id, tx_id, addresses[1] AS addr FROM events WHERE subscription_id = ${sub} AND id = ${"evt_" + g.toString(16).toUpperCase().padStart(26, "0")}`) as {
      id: string; tx_id: string; addr: string;
    }[];
    if (!probe) throw new Error("probe event not found");
    const spec = (path: string): LoadSpec => ({ url: stack.baseUrl + path, method: "GET", headers: auth, concurrency: CONCURRENCY, seconds, expectStatus: 200 });
    const pk = await load(spec(`/v1/subscriptions/${sub}/events/${probe.id}`));
    const byTx = await load(spec(`/v1/events?txId=${probe.tx_id}`));
    const byAddr = await load(spec(`/v1/events?address=${probe.addr}&limit=50`));
    console.log(line("GET one event (primary key), baseline", pk));
    console.log(line("GET /v1/events?txId=", byTx, "target p99 ≤ 20 ms"));
    console.log(line("GET /v1/events?address=", byAddr, "target p99 ≤ 20 ms"));

    const since = new Date(Date.now() - 13 * 86_400_000).toISOString();
    const during = load(spec(`/v1/events?txId=${probe.tx_id}`));
    const t0 = performance.now();
    const rec = await fetch(`${stack.baseUrl}/v1/subscriptions/${sub}/events/recover`, {
      method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ since }),
    });
    const recoverMs = performance.now() - t0;
    const busy = await during;
    console.log(`recover: ${rec.status} ${JSON.stringify(await rec.json())} in ${(recoverMs / 1000).toFixed(1)} s   target ≤ 30 s for 100000 (this run: ${recoverEvents} failed)`);
    console.log(line("GET /v1/events?txId= during recover", busy, `idle p99 ${byTx.p99Ms.toFixed(1)} ms; target ≤ 2× idle (the load ran ${seconds} s, recover ${(recoverMs / 1000).toFixed(1)} s)`));
  } finally {
    await db.close();
    await stack.stop();
  }
}
