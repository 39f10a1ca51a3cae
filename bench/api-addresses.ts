// `bun run bench api-addresses` (and the last part of `bun run bench api`): PATCH adding 10,000 addresses and PUT
// replacing 10,000 with 10,000 others, one HTTP request each, end to end through the gateway (auth, JSON, RPC to the
// registry, the PostgreSQL transaction with its outbox row, the applier's Redis write the answer waits for). Beside
// two floors measured in the same run: the same 10,000-entry body POSTed to a bare Bun.serve that parses it (HTTP and
// JSON alone), and one unnest INSERT of 10,000 rows straight into PostgreSQL (the bulk SQL alone).
// BENCH_ADDRESS_RUNS sets the number of requests of each kind (default 15); the median is reported.
//
// Where the time goes (2026-11-24, phases timed inside the registry over 9 requests each, load average ~20 on 2
// cores, so every figure is inflated alike): PATCH 849 ms = the PostgreSQL transaction 677 ms (80%: the INSERT of
// 10,000 rows into subscription_addresses with its primary key and seq index is most of it; EXPLAIN ANALYZE put that
// INSERT alone at 310-460 ms in the same minutes) + the applier's Redis write 140 ms (16%) + the rest (gateway JSON,
// the response). PUT 1,364 ms = transaction 1,027 ms (DELETE, read of the old list, INSERT) + Redis 383 ms (10,000
// removals and 10,000 additions). The process's own CPU per request is 65 / 87 ms (base58check validation, JSON,
// ioredis encoding 20,000-40,000 script arguments); the applier's batch statement and BEGIN take under 1 ms. The
// outbox puts the Redis write after COMMIT (the write-through it replaced ran it beside the SQL, and so showed
// changes that had not committed yet): that sequential step is the price of "no lookup sees an uncommitted change".
import { randomBytes } from "node:crypto";
import { loadavg } from "node:os";
import { SQL } from "bun";
import { setLogLevel } from "../common/logger.ts";
import { hexToBase58 } from "../common/tron-address.ts";
import { startStack, TEST_DESTINATION, type Stack } from "../test/support/stack.ts";

const N = 10_000;
const CHAIN = "tron:mainnet";

const addresses = (n: number) => Array.from({ length: n }, () => hexToBase58("41" + randomBytes(20).toString("hex")));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (x: number) => `${x.toFixed(0)} ms`;

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const v = await fn();
  return [performance.now() - t0, v];
}

/** Wall time and this process's CPU time (gateway and registry run in it) of one request, in ms. */
async function timedCpu(fn: () => Promise<unknown>): Promise<[number, number]> {
  const c0 = process.cpuUsage();
  const [t] = await timed(fn);
  const c = process.cpuUsage(c0);
  return [t, (c.user + c.system) / 1000];
}

export interface AddressWriteFigures {
  patchMs: number;
  putMs: number;
  /** CPU of the service process (gateway + registry, in-process here) per request: steadier than wall time on a loaded machine. */
  patchCpuMs: number;
  putCpuMs: number;
  jsonFloorMs: number;
  sqlFloorMs: number;
}

/** Measures against a running stack; returns the medians. */
export async function addressWrites(stack: Stack, apiKey: string, runs = Number(process.env.BENCH_ADDRESS_RUNS ?? 15)): Promise<AddressWriteFigures> {
  const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" };
  const body = (list: string[]) => JSON.stringify(list.map((address) => ({ chainId: CHAIN, address })));
  const create = async () => {
    const res = await fetch(`${stack.baseUrl}/v1/subscriptions`, {
      method: "POST",
      headers,
      body: JSON.stringify({ destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.broadcasted"] }),
    });
    if (res.status !== 201) throw new Error(`create failed: ${res.status}`);
    return ((await res.json()) as { id: string }).id;
  };
  const call = async (method: string, path: string, text: string) => {
    const res = await fetch(`${stack.baseUrl}${path}`, { method, headers, body: text });
    const out = await res.text();
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${out.slice(0, 200)}`);
  };

  // Floor 1: the same body to a bare server that parses it.
  const hello = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (req) => {
      const parsed = (await req.json()) as { add: unknown[] };
      return Response.json({ n: parsed.add.length });
    },
  });
  // Floor 2: one bulk INSERT of the same number of rows into a scratch table.
  const sql = new SQL(stack.database.url, { max: 1 });
  await sql`CREATE TEMP TABLE bench_floor (subscription_id text, chain_id text, address text, PRIMARY KEY (subscription_id, chain_id, address))`;

  const patch: number[] = [];
  const put: number[] = [];
  const patchCpu: number[] = [];
  const putCpu: number[] = [];
  const jsonFloor: number[] = [];
  const sqlFloor: number[] = [];
  try {
    for (let r = 0; r < runs + 2; r++) {
      const first = addresses(N);
      const second = addresses(N);
      const id = await create();
      const patchText = `{"add":${body(first)}}`;
      const putText = body(second);
      const [tPatch, cPatch] = await timedCpu(() => call("PATCH", `/v1/subscriptions/${id}/filters/addresses`, patchText));
      const [tPut, cPut] = await timedCpu(() => call("PUT", `/v1/subscriptions/${id}/filters/addresses`, putText));
      const [tJson] = await timed(async () => {
        const res = await fetch(`http://127.0.0.1:${hello.port}/`, { method: "POST", headers, body: `{"add":${body(first)}}` });
        await res.text();
      });
      const [tSql] = await timed(
        () => sql`INSERT INTO bench_floor SELECT ${id}, ${CHAIN}, a FROM unnest(${`{${first.join(",")}}`}::text[]) AS a`,
      );
      if (r < 2) continue; // warm-up
      patch.push(tPatch);
      put.push(tPut);
      patchCpu.push(cPatch);
      putCpu.push(cPut);
      jsonFloor.push(tJson);
      sqlFloor.push(tSql);
    }
  } finally {
    hello.stop(true);
    await sql.close();
  }
  return { patchMs: median(patch), putMs: median(put), patchCpuMs: median(patchCpu), putCpuMs: median(putCpu), jsonFloorMs: median(jsonFloor), sqlFloorMs: median(sqlFloor) };
}

export function printAddressWrites(f: AddressWriteFigures): void {
  console.log(`PATCH of ${N.toLocaleString("en")} addresses (added, index applied)  ${ms(f.patchMs).padStart(7)}   service CPU ${ms(f.patchCpuMs)}   target <= 250 ms`);
  console.log(`PUT of ${N.toLocaleString("en")} replacing ${N.toLocaleString("en")} (index applied)   ${ms(f.putMs).padStart(7)}   service CPU ${ms(f.putCpuMs)}   target <= 300 ms`);
  console.log(`  floors in the same run: the same body parsed by a bare Bun.serve ${ms(f.jsonFloorMs)}; one unnest INSERT of ${N.toLocaleString("en")} rows ${ms(f.sqlFloorMs)}`);
  console.log(`  PATCH is ${(f.patchMs / (f.jsonFloorMs + f.sqlFloorMs)).toFixed(1)}x the sum of the two floors; PUT ${(f.putMs / (f.jsonFloorMs + f.sqlFloorMs)).toFixed(1)}x`);
}

export default async function bench(): Promise<void> {
  setLogLevel("warn");
  const stack = await startStack({ env: { RATE_LIMIT_RPS: "1000000", RATE_LIMIT_BURST: "1000000", LOG_LEVEL: "warn" } });
  try {
    const { key } = await stack.createKey({ name: "bench" });
    const figures = await addressWrites(stack, key);
    const [load1] = loadavg();
    console.log(`address writes through HTTP, medians; load average ${load1!.toFixed(2)} (1 min)`);
    printAddressWrites(figures);
  } finally {
    await stack.stop();
  }
}
