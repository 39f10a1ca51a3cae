// A destination's compressed answer is never decompressed beyond the stored limit: gzip, deflate, br and zstd bombs
// (64 MiB of "a" each), sent with their small Content-Length and chunked without one, 7 events each at once: 56 bombs in flight, past the
// issue's 50 concurrent (400 at once, 50 a bomb, grew the deliverer 34-51 MB, mostly per-connection buffers). The
// deliverer runs as its own process so its RSS (/proc/<pid>/status) is its alone; a watchdog kills it should it
// pass the bound, so a regression fails the test at once instead of taking the machine's memory.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import * as zlib from "node:zlib";
import type { Subprocess } from "bun";
import { serveService, type ServedService } from "../../common/service.ts";
import { enqueueTransfers, spawnDelivererProcess, startDeliveryBed, type DeliveryBed } from "../support/delivery.ts";
import { until } from "../support/wait.ts";

const BOMB_BYTES = 64 * 2 ** 20;
const EVENTS_PER_BOMB = 7;
const LIMIT = 4096;
/** The bound the issue sets on the deliverer's growth while it takes every bomb. */
const GROWTH_BOUND_MB = 50;

const plain = Buffer.alloc(BOMB_BYTES, "a");
const BOMBS: Record<string, Buffer> = {
  gzip: zlib.gzipSync(plain, { level: 9 }),
  deflate: zlib.deflateSync(plain, { level: 9 }),
  br: zlib.brotliCompressSync(plain, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } }),
  zstd: zlib.zstdCompressSync(plain),
};

/** The uncompressed answer of the warm-up round: as long as the largest bomb, plain text. */
const PLAIN_ANSWER = Buffer.alloc(64 * 1024, "a");

interface BombServer {
  name: string;
  server: Server;
  url: string;
  /** false: the warm-up round, answered uncompressed; true: the bomb. */
  armed: boolean;
}

/** One HTTPS destination per bomb and framing (the deliverer limits attempts per host, not per path). */
async function startBomb(bed: DeliveryBed, encoding: string, framing: "length" | "chunked"): Promise<BombServer> {
  const bomb = BOMBS[encoding]!;
  const server = createServer({ cert: bed.pki.cert, key: bed.pki.key }, (req, res) => {
    req.resume();
    req.on("end", () => {
      const body = self.armed ? bomb : PLAIN_ANSWER;
      const headers: Record<string, string> = { "content-type": "text/plain" };
      if (self.armed) headers["content-encoding"] = encoding;
      if (framing === "length") {
        res.writeHead(200, { ...headers, "content-length": String(body.length) });
        res.end(body);
        return;
      }
      res.writeHead(200, headers);
      for (let off = 0; off < body.length; off += 16 * 1024) res.write(body.subarray(off, off + 16 * 1024));
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const self: BombServer = { name: `${encoding}/${framing}`, server, url: `https://localhost:${(server.address() as AddressInfo).port}/bomb`, armed: false };
  return self;
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]) / 1024;
}

/** Events of these subscriptions that are no longer pending. */
async function finishedCount(bed: DeliveryBed, subscriptionIds: string[]): Promise<number> {
  const [row] = (await bed.sql`
    SELECT count(*)::int AS n FROM event_deliveries
    WHERE subscription_id = ANY(${subscriptionIds}::text[]) AND status <> 'pending'`) as { n: number }[];
  return row!.n;
}

describe("compressed answers (decompression bombs)", () => {
  let bed: DeliveryBed;
  let registryServed: ServedService;
  let child: Subprocess | undefined;
  const bombs: BombServer[] = [];

  beforeAll(async () => {
    // The in-process deliverer only answers Enqueue; the child process sends.
    // On a loaded machine some of 400 TLS attempts at once time out and are retried (the bed's short schedule):
    // speed is not the point, the memory and the stored answers are.
    bed = await startDeliveryBed({ delivererDeps: { startWorker: false } });
    registryServed = await serveService(bed.registry, 0);
    for (const encoding of Object.keys(BOMBS)) {
      for (const framing of ["length", "chunked"] as const) bombs.push(await startBomb(bed, encoding, framing));
    }
  }, 60_000);

  afterAll(async () => {
    child?.kill("SIGKILL");
    for (const b of bombs) b.server.close();
    await registryServed?.stop();
    await bed?.stop();
  }, 60_000);

  test(`${EVENTS_PER_BOMB} events at each bomb: the deliverer grows < ${GROWTH_BOUND_MB} MB, each body the first ${LIMIT} bytes`, async () => {
    child = spawnDelivererProcess(bed, `http://127.0.0.1:${registryServed.http.port}`);
    const pid = child.pid;

    const subs: { name: string; subscriptionId: string }[] = [];
    for (const b of bombs) subs.push({ name: b.name, subscriptionId: (await bed.subscribe(`/${b.name}`, { url: b.url })).subscriptionId });
    const ids = subs.map((s) => s.subscriptionId);
    const round = async (n: number) => {
      const events = await Promise.all(subs.map((s, i) => enqueueTransfers(bed, s.subscriptionId, EVENTS_PER_BOMB, 1_000 * i + 100 * n)));
      await until(
        `every event delivered or failed (round ${n})`,
        async () => killed || (await finishedCount(bed, ids)) === ids.length * EVENTS_PER_BOMB * n,
        90_000,
      );
      return events.flatMap((e) => e.ids);
    };

    // The same round answered uncompressed first, so the baseline is a deliverer that has already held this many
    // TLS connections and attempts at once: what grows after it is the bombs' doing.
    let killed = false;
    await round(1);
    await Bun.sleep(300);
    const baseline = rssMb(pid);

    let peak = baseline;
    const watchdog = setInterval(() => {
      try {
        peak = Math.max(peak, rssMb(pid));
      } catch {
        return; // the process is gone
      }
      if (peak - baseline >= GROWTH_BOUND_MB && !killed) {
        killed = true;
        child!.kill("SIGKILL");
      }
    }, 10);

    try {
      for (const b of bombs) b.armed = true;
      const bombEvents = await round(2);
      expect(killed ? `killed at ${Math.round(peak - baseline)} MB of growth (bound ${GROWTH_BOUND_MB})` : "alive").toBe("alive");
      expect(peak - baseline).toBeLessThan(GROWTH_BOUND_MB);

      const rows = (await bed.sql`
        SELECT subscription_id AS sub, status, response_status AS code, response_body AS body FROM event_deliveries
        WHERE event_id = ANY(${bombEvents}::text[])`) as { sub: string; status: string; code: number | null; body: string | null }[];
      expect(rows.length).toBe(ids.length * EVENTS_PER_BOMB);
      for (const s of subs) {
        const mine = rows.filter((r) => r.sub === s.subscriptionId);
        // The answer is read as far as the limit, decoded: the first 4,096 bytes of what the destination meant.
        const summary = new Map<string, number>();
        for (const r of mine) {
          const line = `${r.status} ${r.code} ${Buffer.byteLength(r.body ?? "")} ${r.body === "a".repeat(LIMIT) || r.body?.slice(0, 80)}`;
          summary.set(line, (summary.get(line) ?? 0) + 1);
        }
        expect(`${s.name}: ${[...summary].map(([line, n]) => `${n} ${line}`).join(", ")}`).toBe(`${s.name}: ${EVENTS_PER_BOMB} delivered 200 ${LIMIT} true`);
      }
    } finally {
      clearInterval(watchdog);
    }
  }, 240_000);
});
