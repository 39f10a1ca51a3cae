// An HTTP proxy in front of the TRON node simulator that the matchers read through, so the fault run can make the
// node misbehave for stretches without touching the simulator: `429` answers Too Many Requests (with Retry-After),
// `timeout` holds each request past the matcher's client timeout and then answers 504, `ok` forwards.
export type NodeMode = "ok" | "429" | "timeout";

export interface NodeFaults {
  url: string;
  setMode(mode: NodeMode): void;
  /** Requests answered per mode (forwarded ones under "ok"). */
  counts: Record<NodeMode, number>;
  close(): Promise<void>;
}

/** Longer than the matcher's TRON client timeout (common/tron-node/client.ts, 10 s). */
const HOLD_MS = 12_000;

export function startNodeFaults(simUrl: string): NodeFaults {
  let mode: NodeMode = "ok";
  const counts: Record<NodeMode, number> = { ok: 0, "429": 0, timeout: 0 };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 30,
    async fetch(req) {
      const now = mode;
      counts[now]++;
      if (now === "429") return new Response('{"Error":"rate limited"}', { status: 429, headers: { "retry-after": "1" } });
      if (now === "timeout") {
        await Promise.race([Bun.sleep(HOLD_MS), new Promise((resolve) => req.signal.addEventListener("abort", resolve))]);
        return new Response("", { status: 504 });
      }
      const url = new URL(req.url);
      const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
      try {
        const res = await fetch(`${simUrl}${url.pathname}${url.search}`, { method: req.method, headers: req.headers, body });
        return new Response(await res.arrayBuffer(), { status: res.status, headers: res.headers });
      } catch {
        // The simulator's connection dropped (a busy machine): the node answers 502, as a proxy in front of it would.
        return new Response("", { status: 502 });
      }
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    setMode: (m) => void (mode = m),
    counts,
    async close() {
      await server.stop(true);
    },
  };
}
