// The matcher's operational face: /healthz, /readyz (PostgreSQL, Redis and a TRON node that has answered; the
// deliverer shown, not required) and /metrics (lag behind the head, node reachability, present from the start).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { loadConfig } from "../../../common/config.ts";
import { metrics } from "../../../common/http-service.ts";
import { setLogSink } from "../../../common/logger.ts";
import { inProcessTransport } from "../../../common/rpc.ts";
import { serveService, type ServedService } from "../../../common/service.ts";
import { createMatcher, type MatcherHandle } from "../../../matcher/index.ts";
import { startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";

let t: MatcherBed;
const opened: { handle: MatcherHandle; served: ServedService }[] = [];

beforeAll(async () => {
  t = await startMatcherBed({ chains: ["tron:mainnet"], matcher: false });
});
afterAll(async () => {
  for (const o of opened) {
    await o.served.stop();
    await o.handle.close();
  }
  await t?.stop();
});

async function serve(nodeUrl: string, chain: "tron:mainnet" | "tron:nile") {
  const handle = await createMatcher(loadConfig({ ...t.bed.env, MATCHER_CHAINS: chain }), {
    deliverer: inProcessTransport(t.bed.deliverer!.routes),
    nodeUrls: { [chain]: nodeUrl },
  });
  const served = await serveService(handle, 0);
  opened.push({ handle, served });
  return { handle, url: `http://127.0.0.1:${served.http.port}` };
}

async function metric(url: string, name: string, chain: string): Promise<number | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes(`chain="${chain}"`));
  return line === undefined ? undefined : Number(line.split(" ").pop());
}

test("healthy stack: /healthz and /readyz answer 200, /metrics shows the head, the checkpoint and the lag", async () => {
  const sim = t.sims["tron:mainnet"]!;
  const { handle, url } = await serve(sim.url, "tron:mainnet");
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
  let ready = await fetch(`${url}/readyz`);
  // Ready once the node has answered: a bounded wait for the stream's first request.
  for (let i = 0; i < 100 && ready.status !== 200; i++) {
    await Bun.sleep(100);
    ready = await fetch(`${url}/readyz`);
  }
  expect(ready.status).toBe(200);
  expect(await ready.json()).toEqual({
    status: "ready",
    checks: { postgres: true, redis: true, node: true },
    informational: { deliverer: true },
  });
  const [b] = sim.produce(1);
  await handle.waitForBlock("tron:mainnet", b!.block.block_header.raw_data.number);
  expect(await metric(url, "matcher_checkpoint_block", "tron:mainnet")).toBe(b!.block.block_header.raw_data.number);
  expect(await metric(url, "matcher_lag_blocks", "tron:mainnet")).toBe(0);
  expect(await metric(url, "matcher_node_up", "tron:mainnet")).toBe(1);
});

test("a TRON node that never answered: unready, lag NaN and node down from the start, one log line naming the variable", async () => {
  const closed = Bun.serve({ port: 0, fetch: () => new Response() });
  const deadUrl = `http://127.0.0.1:${closed.port}`;
  closed.stop(true);
  const lines: string[] = [];
  const restore = setLogSink((line) => lines.push(line));
  try {
    const errorsBefore = (await metricsOfProcess("matcher_stream_errors_total", "tron:nile")) ?? 0;
    const { url } = await serve(deadUrl, "tron:nile");
    // From the start, before the stream's first request has failed.
    expect(await metric(url, "matcher_node_up", "tron:nile")).toBe(0);
    expect(await metric(url, "matcher_lag_blocks", "tron:nile")).toBeNaN();
    expect(await metric(url, "matcher_lag_seconds", "tron:nile")).toBeNaN();
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: "not_ready", checks: { postgres: true, redis: true, node: false } });

    // Several failed steps (each retried inside the client first) make one line, not one per retry.
    const deadline = Date.now() + 30_000;
    while (((await metric(url, "matcher_stream_errors_total", "tron:nile")) ?? 0) < errorsBefore + 3) {
      if (Date.now() > deadline) throw new Error("the stream never failed three times against a dead node");
      await Bun.sleep(100);
    }
    const nile = lines.filter((l) => l.includes('"chain":"tron:nile"') && /"level":"(warn|error)"/.test(l));
    expect(nile).toHaveLength(1);
    expect(nile[0]).toContain("TRON_NILE_NODE_URL");
    expect(nile[0]).toContain("MATCHER_CHAINS");
    expect(nile[0]).toContain(deadUrl);
    expect(nile[0]).not.toContain("stack");
    expect((await fetch(`${url}/readyz`)).status).toBe(503);
  } finally {
    setLogSink(restore);
  }
}, 60_000);

/** A metric as this process holds it (one registry per process: earlier test files may have counted already). */
async function metricsOfProcess(name: string, chain: string): Promise<number | undefined> {
  const text = await metrics.metrics();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes(`chain="${chain}"`));
  return line === undefined ? undefined : Number(line.split(" ").pop());
}

test("a standby replica (the lease is held elsewhere) becomes ready once its node answers", async () => {
  const sim = t.sims["tron:mainnet"]!;
  // The first test's matcher still holds mainnet's lease: this one waits for it, streaming nothing.
  const { handle, url } = await serve(sim.url, "tron:mainnet");
  let ready = await fetch(`${url}/readyz`);
  for (let i = 0; i < 100 && ready.status !== 200; i++) {
    await Bun.sleep(100);
    ready = await fetch(`${url}/readyz`);
  }
  expect(await ready.json()).toMatchObject({ status: "ready", checks: { node: true } });
  expect(handle.progress("tron:mainnet")).toBeNull();
});
