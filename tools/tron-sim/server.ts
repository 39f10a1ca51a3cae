// A java-tron full-node HTTP API simulator on Bun.serve: the /wallet endpoints the matcher uses (GET with query
// parameters and POST with a JSON body, `visible` honoured on every one, as java-tron accepts them), a head that
// advances every `blockMs`, the solidity API (/walletsolidity/*: the same endpoints, answering only up to the
// solidified head, which trails the head by `solidLag` blocks), and /sim/* controls for tests: produce blocks now,
// queue transfers and account activity, fork, pause, switch the solidity API off, and faults (a delayed, refused or unanswered request;
// a second node stuck on a replaced branch answering every other request).
import type { Server } from "bun";
import { ForkRefused, SimChain, renderBlock, renderInfos, type ChainOptions, type ChainView, type StoredBlock } from "./chain.ts";
import { addressToBase58, renderVisible } from "./forms.ts";
import type { ActivitySpec } from "./activity.ts";
import type { TransferSpec } from "./generate.ts";

export interface TronSimOptions extends ChainOptions {
  port?: number;
  hostname?: string;
  /** A new block every this many ms; 0 = only on POST /sim/produce. */
  blockMs?: number;
  /** Render every backlog block (both forms, infos included) before serving, so a benchmark times the reader only. */
  prerender?: boolean;
}

export interface TronSim {
  url: string;
  port: number;
  chain: SimChain;
  server: Server<undefined>;
  /** Produces a block now (and queued transfers with it). */
  produce(count?: number): StoredBlock[];
  /** The pool's addresses in base58 (those generated blocks use). */
  poolAddresses(limit?: number): string[];
  /** Replaces the faults; the new list applies to requests from now on. */
  setFaults(faults: SimFault[]): void;
  /** How many requests a fault was applied to, per path pattern, since the start. */
  faultHits(path: string): number;
  /** How many requests an endpoint ("walletsolidity/getblock") was asked, since the start. */
  served(endpoint: string): number;
  /**
   * A second node behind the same URL: after a fork with `keepReplaced`, a node still on the replaced branch (its
   * solidified head at most the common ancestor) answers every other request ("alternate"), or every /wallet one
   * while the first node answers /walletsolidity ("wallet", a balancer routing by path); "off" ends it.
   */
  alternate(mode: ReplacedAnswers): void;
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

/** A fault on matching node requests: a delay before the real answer, or an HTTP status instead of it. */
export interface SimFault {
  /** "wallet/getnowblock", "walletsolidity/getnowblock", "walletsolidity/*" (every endpoint of one API) or "*". */
  path: string;
  /** Held this long before answering (longer than the client's timeout: a request that times out). */
  delayMs?: number;
  /** Answered with this status (and a small JSON error body) instead of the real answer. */
  status?: number;
  /** Applies to this many requests, then is spent (unset: until the faults are replaced). */
  times?: number;
}

/** Which requests the node on a replaced branch answers (see TronSim.alternate). */
export type ReplacedAnswers = "off" | "alternate" | "wallet";

type Params = Record<string, unknown>;

async function readParams(req: Request, url: URL): Promise<Params> {
  const params: Params = Object.fromEntries(url.searchParams.entries());
  if (req.method === "POST") {
    const text = await req.text();
    if (text.trim()) {
      const body = JSON.parse(text) as unknown;
      if (body && typeof body === "object" && !Array.isArray(body)) Object.assign(params, body);
    }
  }
  return params;
}

function flag(v: unknown): boolean {
  return v === true || v === "true";
}

function num(v: unknown): number {
  const n = typeof v === "number" ? v : Number(v);
  return Number.isFinite(n) ? n : NaN;
}

const JSON_HEADERS = { "content-type": "application/json" };
const SYNTHESIZED_HEADERS = { ...JSON_HEADERS, "x-tron-sim-synthesized": "transaction-info" };

function text(body: string, synthesized = false): Response {
  return new Response(body, { headers: synthesized ? SYNTHESIZED_HEADERS : JSON_HEADERS });
}

export function startTronSim(opts: TronSimOptions = {}): TronSim {
  const chain = new SimChain(opts);
  // A backlog made on demand is rendered when asked (rendering it all would hold it all).
  if (opts.prerender && !opts.backlogOnDemand) {
    const first = chain.first().block.block_header.raw_data.number;
    const last = chain.head().block.block_header.raw_data.number;
    for (let n = first; n <= last; n++) {
      const s = chain.byNumber(n)!;
      // The matcher asks for visible=true; the other form renders on demand.
      renderBlock(s, true);
      renderInfos(s, true);
    }
  }
  let faults: SimFault[] = [];
  const hits = new Map<string, number>();
  const asked = new Map<string, number>();
  let alternate: ReplacedAnswers = "off";
  let answerFromReplaced = false;
  /** The first fault matching `endpoint` ("wallet/getnowblock"), counted and spent by one. */
  const faultFor = (endpoint: string): SimFault | undefined => {
    const api = endpoint.slice(0, endpoint.indexOf("/"));
    const f = faults.find((f) => (f.times === undefined || f.times > 0) && (f.path === "*" || f.path === endpoint || f.path === `${api}/*`));
    if (!f) return undefined;
    if (f.times !== undefined) f.times--;
    hits.set(f.path, (hits.get(f.path) ?? 0) + 1);
    return f;
  };
  /** Which node answers this request (the simulated one, or the one on the replaced branch: see alternate). */
  const viewFor = (solidity: boolean): ChainView => {
    const replaced = alternate === "off" ? null : chain.replacedView();
    if (!replaced) return chain;
    if (alternate === "wallet") return solidity ? chain : replaced;
    answerFromReplaced = !answerFromReplaced;
    return answerFromReplaced ? replaced : chain;
  };
  let blockMs = opts.blockMs ?? 3_000;
  let paused = blockMs <= 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const schedule = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (paused || blockMs <= 0) return;
    const next = chain.head().block.block_header.raw_data.timestamp + blockMs;
    timer = setTimeout(() => {
      chain.produce();
      schedule();
    }, Math.max(0, next - chain.now()));
  };

  const produce = (count = 1) => {
    const out: StoredBlock[] = [];
    for (let i = 0; i < count; i++) out.push(chain.produce());
    schedule();
    return out;
  };

  const summary = (s: StoredBlock) => ({
    number: s.block.block_header.raw_data.number,
    blockID: s.block.blockID,
    timestamp: s.block.block_header.raw_data.timestamp,
    transactions: s.block.transactions?.length ?? 0,
  });

  /**
   * The /wallet endpoints; with `solidity`, the /walletsolidity ones: the same answers, cut at the solidified head
   * (a block above it is `{}`, its infos `[]`), as java-tron's solidity API serves only solidified blocks.
   */
  async function wallet(path: string, p: Params, solidity: boolean, view: ChainView): Promise<Response> {
    const visible = flag(p.visible);
    const top = () => (solidity ? view.solid() : view.head());
    const limit = (s: StoredBlock | undefined): StoredBlock | undefined =>
      s && solidity && s.block.block_header.raw_data.number > top().block.block_header.raw_data.number ? undefined : s;
    const byNumber = (n: number) => limit(view.byNumber(n));
    switch (path) {
      case "getnowblock":
        return text(renderBlock(top(), visible));
      case "getblockbynum": {
        const s = byNumber(num(p.num));
        return text(s ? renderBlock(s, visible) : "{}");
      }
      case "getblockbyid": {
        const s = limit(view.byBlockId(String(p.value ?? "")));
        return text(s ? renderBlock(s, visible) : "{}");
      }
      case "getblock": {
        const key = p.id_or_num;
        const detail = flag(p.detail);
        if (key === undefined || key === "") return text(renderBlock(top(), visible, detail));
        const s = /^\d+$/.test(String(key)) ? byNumber(Number(key)) : limit(view.byBlockId(String(key)));
        return text(s ? renderBlock(s, visible, detail) : "{}");
      }
      case "getblockbylimitnext": {
        const start = num(p.startNum);
        const end = num(p.endNum);
        if (!(end > start) || end - start > 100) return text(JSON.stringify({ Error: "invalid range: endNum - startNum must be 1..100" }));
        const parts: string[] = [];
        for (let n = start; n < end; n++) {
          // A block made on demand costs tens of ms: other requests (the live streams' polls) go in between, as on
          // a node serving requests concurrently.
          if (chain.onDemandBlock(n)) await new Promise((resolve) => setImmediate(resolve));
          const s = byNumber(n);
          if (!s || n < chain.first().block.block_header.raw_data.number) break;
          parts.push(renderBlock(s, visible));
        }
        return text(parts.length === 0 ? "{}" : `{"block":[${parts.join(",")}]}`);
      }
      case "getblockbylatestnum": {
        const count = Math.min(100, Math.max(1, num(p.num) || 1));
        const headNum = top().block.block_header.raw_data.number;
        const parts: string[] = [];
        for (let n = headNum - count + 1; n <= headNum; n++) {
          const s = byNumber(n);
          if (s) parts.push(renderBlock(s, visible));
        }
        return text(`{"block":[${parts.join(",")}]}`);
      }
      case "gettransactioninfobyblocknum": {
        const s = byNumber(num(p.num));
        if (!s) return text("[]");
        let count = s.infos.length;
        if (chain.infoLagMs > 0 && s === view.head() && Date.now() - s.availableAt < chain.infoLagMs) count = Math.floor(count / 2);
        return text(renderInfos(s, visible, count), s.synthesized);
      }
      case "gettransactioninfobyid": {
        const id = String(p.value ?? "");
        const s = limit(chain.byTxId(id));
        const info = s?.infos.find((i) => i.id === id);
        if (!s || !info) return text("{}");
        return text(JSON.stringify(visible ? renderVisible(info) : info), !chain.isRecordedInfo(id));
      }
      case "gettransactionbyid": {
        const id = String(p.value ?? "");
        const tx = limit(chain.byTxId(id))?.block.transactions?.find((t) => t.txID === id);
        return text(tx ? JSON.stringify(visible ? renderVisible(tx) : tx) : "{}");
      }
      default:
        return new Response(JSON.stringify({ Error: `unknown endpoint /wallet/${path}` }), { status: 404, headers: JSON_HEADERS });
    }
  }

  async function control(path: string, req: Request, p: Params): Promise<Response> {
    switch (`${req.method} ${path}`) {
      case "GET state":
        return Response.json({
          head: summary(chain.head()),
          solid: summary(chain.solid()),
          first: summary(chain.first()),
          blockMs,
          paused,
          txPerBlock: chain.txPerBlock,
          solidLag: chain.solidLag,
          solidityApi: chain.solidityApi,
        });
      case "GET addresses": {
        const limit = Math.min(chain.pool.length, num(p.limit) || 100);
        return Response.json({ addresses: chain.pool.slice(0, limit).map(addressToBase58) });
      }
      case "GET history":
        return Response.json({ transfers: chain.history });
      case "POST produce":
        // advanceMs moves the simulator's clock forward first (a test passing transactions' expiration at once).
        if (p.advanceMs !== undefined) chain.clockOffsetMs += Math.max(0, num(p.advanceMs) || 0);
        return Response.json({ blocks: produce(Math.max(1, num(p.count) || 1)).map(summary) });
      case "POST transfers": {
        const specs = (p.transfers ?? []) as TransferSpec[];
        const txIds = chain.enqueue(specs);
        if (flag(p.produce)) produce(1);
        return Response.json({ txIds });
      }
      case "POST activities": {
        if (!Array.isArray(p.activities)) return Response.json({ Error: "activities must be a list" }, { status: 400 });
        const activities = chain.enqueueActivities(p.activities as ActivitySpec[]);
        if (flag(p.produce)) produce(1);
        return Response.json({ txIds: activities.map((a) => a.txId), activities });
      }
      case "POST place": {
        const fixture = p.fixture;
        if (fixture !== "failed-usdt" && fixture !== "internal") {
          return Response.json({ error: 'fixture must be "failed-usdt" or "internal"' }, { status: 400 });
        }
        const txIds = chain.place(fixture);
        if (flag(p.produce)) produce(1);
        return Response.json({ txIds });
      }
      case "POST fork": {
        const depth = num(p.depth);
        const length = p.length === undefined ? depth : num(p.length);
        const reinclude = Array.isArray(p.reinclude) ? p.reinclude.map(String) : p.reinclude === undefined ? true : flag(p.reinclude);
        try {
          const result = chain.fork(depth, length, reinclude, p.at === undefined ? undefined : num(p.at), flag(p.keepReplaced));
          schedule();
          return Response.json(result);
        } catch (err) {
          if (err instanceof ForkRefused) return Response.json({ Error: err.message }, { status: 400 });
          throw err;
        }
      }
      case "POST faults":
        faults = Array.isArray(p.faults) ? (p.faults as SimFault[]).map((f) => ({ ...f })) : [];
        if (p.alternate === "alternate" || p.alternate === "wallet" || p.alternate === "off") alternate = p.alternate;
        return Response.json({ faults, alternate });
      case "GET faults":
        return Response.json({ faults, alternate, hits: Object.fromEntries(hits) });
      case "POST pause":
        paused = true;
        schedule();
        return Response.json({ paused });
      case "POST resume":
        paused = false;
        schedule();
        return Response.json({ paused });
      case "POST config": {
        if (p.blockMs !== undefined) blockMs = num(p.blockMs);
        if (p.txPerBlock !== undefined) chain.txPerBlock = num(p.txPerBlock);
        if (p.infoLagMs !== undefined) chain.infoLagMs = num(p.infoLagMs);
        if (p.solidLag !== undefined) {
          const lag = num(p.solidLag);
          if (!Number.isInteger(lag) || lag < 0) return Response.json({ Error: "solidLag must be a whole number ≥ 0" }, { status: 400 });
          chain.solidLag = lag;
        }
        if (p.solidityApi !== undefined) chain.solidityApi = flag(p.solidityApi);
        schedule();
        return Response.json({ blockMs, txPerBlock: chain.txPerBlock, infoLagMs: chain.infoLagMs, solidLag: chain.solidLag, solidityApi: chain.solidityApi });
      }
      default:
        return Response.json({ error: "not_found" }, { status: 404 });
    }
  }

  const server = Bun.serve({
    port: opts.port ?? 0,
    hostname: opts.hostname ?? "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      try {
        const p = await readParams(req, url);
        const wm = /^\/(wallet|walletsolidity)\/([a-z]+)$/.exec(url.pathname);
        if (wm) {
          const solidity = wm[1] === "walletsolidity";
          // A full node deployed without the solidity API: nothing is served there.
          if (solidity && !chain.solidityApi) return new Response("Not Found", { status: 404 });
          const endpoint = `${wm[1]}/${wm[2]}`;
          asked.set(endpoint, (asked.get(endpoint) ?? 0) + 1);
          const fault = faultFor(endpoint);
          if (fault?.delayMs) await Bun.sleep(fault.delayMs);
          if (fault?.status) return Response.json({ Error: `simulated HTTP ${fault.status}` }, { status: fault.status });
          return await wallet(wm[2]!, p, solidity, viewFor(solidity));
        }
        const cm = /^\/sim\/([a-z]+)$/.exec(url.pathname);
        if (cm) return await control(cm[1]!, req, p);
        return Response.json({ error: "not_found" }, { status: 404 });
      } catch (err) {
        return Response.json({ Error: String((err as Error).message ?? err) }, { status: 400 });
      }
    },
  });

  schedule();
  return {
    url: `http://${server.hostname}:${server.port}`,
    port: server.port!,
    chain,
    server,
    produce,
    poolAddresses: (limit = chain.pool.length) => chain.pool.slice(0, limit).map(addressToBase58),
    setFaults(list) {
      faults = list.map((f) => ({ ...f }));
    },
    faultHits: (path) => hits.get(path) ?? 0,
    served: (endpoint) => asked.get(endpoint) ?? 0,
    alternate(mode) {
      alternate = mode;
    },
    pause() {
      paused = true;
      schedule();
    },
    resume() {
      paused = false;
      schedule();
    },
    async stop() {
      paused = true;
      if (timer) clearTimeout(timer);
      await server.stop(true);
    },
  };
}
