// The matcher's operational face: /healthz, /readyz (PostgreSQL, Redis and the deliverer — not the TRON node) and
// /metrics (lag behind the head, node reachability).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { loadConfig } from "../../common/config.ts";
import { inProcessTransport } from "../../common/rpc.ts";
import { serveService, type ServedService } from "../../common/service.ts";
import { createMatcher, type MatcherHandle } from "../../matcher/index.ts";
import { startMatcherBed, type MatcherBed } from "./matcher-bed.ts";

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
  const ready = await fetch(`${url}/readyz`);
  expect(ready.status).toBe(200);
  expect(((await ready.json()) as { checks: Record<string, boolean> }).checks).toEqual({ postgres: true, redis: true, deliverer: true });
  const [b] = sim.produce(1);
  await handle.waitForBlock("tron:mainnet", b!.block.block_header.raw_data.number);
  expect(await metric(url, "matcher_checkpoint_block", "tron:mainnet")).toBe(b!.block.block_header.raw_data.number);
  expect(await metric(url, "matcher_lag_blocks", "tron:mainnet")).toBe(0);
  expect(await metric(url, "matcher_node_up", "tron:mainnet")).toBe(1);
});

test("an unreachable TRON node shows in metrics, not in readiness", async () => {
  const closed = Bun.serve({ port: 0, fetch: () => new Response() });
  const deadUrl = `http://127.0.0.1:${closed.port}`;
  closed.stop(true);
  const { url } = await serve(deadUrl, "tron:nile");
  const deadline = Date.now() + 15_000;
  while ((await metric(url, "matcher_node_up", "tron:nile")) !== 0) {
    if (Date.now() > deadline) throw new Error("matcher_node_up{chain=tron:nile} never went to 0");
    await Bun.sleep(100);
  }
  expect((await fetch(`${url}/readyz`)).status).toBe(200);
});
