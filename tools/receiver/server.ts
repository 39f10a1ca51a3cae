// A real HTTPS webhook receiver for tests, the benchmark and the demo. Each path can be given a behaviour,
// including hostile ones (errors, hanging, resets, slow or huge bodies, redirects, 429 with Retry-After), and every
// delivery is checked against the path's signing secrets with the client's WebhookVerifier (clients/typescript).
import { createServer, type Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { WebhookVerifier } from "../../clients/typescript/src/webhooks.ts";

export type Behaviour =
  | { kind: "ok"; status?: number; body?: string }
  | { kind: "status"; status: number; body?: string; headers?: Record<string, string> }
  /** Answers 200 after `ms`. */
  | { kind: "delay"; ms: number }
  /** Accepts the request and never answers. */
  | { kind: "hang" }
  /** Destroys the connection without a response. */
  | { kind: "reset" }
  /**
   * 200 on a connection's first request; a later request on the same (kept-alive) connection gets it destroyed
   * without a response, as a server whose idle timeout closed the connection just as the request came.
   */
  | { kind: "resetReused" }
  /** 200 and headers at once, then one byte every `intervalMs`, never ending. */
  | { kind: "slowBody"; intervalMs: number }
  /** 200 with a body of `bytes` bytes, streamed. */
  | { kind: "bigBody"; bytes: number }
  | { kind: "redirect"; status?: number; location: string }
  /** Behaviours by attempt number on this path (the last one repeats). */
  | { kind: "sequence"; steps: Behaviour[] };

export interface ReceivedDelivery {
  path: string;
  headers: Record<string, string>;
  body: string;
  receivedAt: number;
  /** True when a configured secret verified the signature, false when none did, null when no secret is set. */
  verified: boolean | null;
}

export interface ReceiverOptions {
  cert: string;
  key: string;
  port?: number;
  hostname?: string;
  /** Keep every delivery's body (tests); the benchmark only counts. */
  record?: boolean;
}

export interface Receiver {
  port: number;
  /** https://localhost:<port><path> */
  url(path: string): string;
  setBehaviour(path: string, behaviour: Behaviour): void;
  setSecrets(path: string, secrets: string[]): void;
  deliveries(path?: string): ReceivedDelivery[];
  count(path?: string): number;
  waitFor(predicate: (all: ReceivedDelivery[]) => boolean, timeoutMs?: number): Promise<void>;
  waitForCount(path: string, n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** The check of a path's secrets (any of them verifies), as a customer's endpoint makes it; none for an empty list. */
function verifierOf(secrets: readonly string[]): WebhookVerifier | undefined {
  return secrets.length > 0 ? new WebhookVerifier(secrets) : undefined;
}

/** Whether `verifier` accepts the delivery; a path whose list of secrets is empty accepts none. */
function verifiedBy(verifier: WebhookVerifier | undefined, body: string, headers: Record<string, string>): boolean {
  return verifier?.verifies(body, headers) ?? false;
}

function headerRecord(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") out[k] = v;
  return out;
}

export async function startReceiver(opts: ReceiverOptions): Promise<Receiver> {
  const behaviours = new Map<string, Behaviour>();
  const secrets = new Map<string, WebhookVerifier | undefined>();
  const attemptsByPath = new Map<string, number>();
  const counts = new Map<string, number>();
  const received: ReceivedDelivery[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const record = opts.record ?? true;

  const requestsOnSocket = new WeakMap<Socket, number>();
  const act = (b: Behaviour, path: string, res: ServerResponse, req: IncomingMessage): void => {
    switch (b.kind) {
      case "ok":
        res.writeHead(b.status ?? 200, { "content-type": "text/plain" }).end(b.body ?? "ok");
        return;
      case "status":
        res.writeHead(b.status, { "content-type": "text/plain", ...b.headers }).end(b.body ?? "");
        return;
      case "hang":
        return;
      case "delay": {
        const t = setTimeout(() => {
          timers.delete(t);
          if (!res.destroyed) res.writeHead(200, { "content-type": "text/plain" }).end("ok");
        }, b.ms);
        timers.add(t);
        return;
      }
      case "reset":
        req.socket.destroy();
        return;
      case "resetReused":
        if ((requestsOnSocket.get(req.socket) ?? 0) > 1) req.socket.destroy();
        else res.writeHead(200, { "content-type": "text/plain" }).end("ok");
        return;
      case "slowBody": {
        res.writeHead(200, { "content-type": "text/plain" });
        const t = setInterval(() => {
          if (res.destroyed) {
            clearInterval(t);
            timers.delete(t);
          } else res.write("x");
        }, b.intervalMs);
        timers.add(t);
        return;
      }
      case "bigBody": {
        res.writeHead(200, { "content-type": "text/plain", "content-length": String(b.bytes) });
        const chunk = Buffer.alloc(64 * 1024, "y");
        let left = b.bytes;
        const pump = () => {
          while (left > 0 && !res.destroyed) {
            const n = Math.min(left, chunk.length);
            left -= n;
            if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
              res.once("drain", pump);
              return;
            }
          }
          if (!res.destroyed) res.end();
        };
        pump();
        return;
      }
      case "redirect":
        res.writeHead(b.status ?? 302, { location: b.location }).end();
        return;
      case "sequence": {
        const n = attemptsByPath.get(path) ?? 0;
        act(b.steps[Math.min(n - 1, b.steps.length - 1)] ?? { kind: "ok" }, path, res, req);
        return;
      }
    }
  };

  const server: Server = createServer({ cert: opts.cert, key: opts.key, keepAlive: true }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requestsOnSocket.set(req.socket, (requestsOnSocket.get(req.socket) ?? 0) + 1);
      const path = (req.url ?? "/").split("?")[0]!;
      attemptsByPath.set(path, (attemptsByPath.get(path) ?? 0) + 1);
      counts.set(path, (counts.get(path) ?? 0) + 1);
      const headers = headerRecord(req);
      const body = Buffer.concat(chunks).toString("utf8");
      const verified = secrets.has(path) ? verifiedBy(secrets.get(path), body, headers) : null;
      if (record) received.push({ path, headers, body, receivedAt: Date.now(), verified });
      act(behaviours.get(path) ?? { kind: "ok" }, path, res, req);
    });
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.on("secureConnection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  // TLS handshakes a client rejects (the untrusted-certificate case) end here; they are expected.
  server.on("tlsClientError", () => {});

  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, opts.hostname ?? "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;

  const waitFor = async (predicate: (all: ReceivedDelivery[]) => boolean, timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(received)) {
      if (Date.now() > deadline) throw new Error(`receiver: condition not met within ${timeoutMs} ms (${received.length} deliveries)`);
      await Bun.sleep(20);
    }
  };

  return {
    port,
    url: (path) => `https://localhost:${port}${path}`,
    setBehaviour: (path, b) => void behaviours.set(path, b),
    setSecrets: (path, list) => void secrets.set(path, verifierOf(list)),
    deliveries: (path) => (path === undefined ? [...received] : received.filter((d) => d.path === path)),
    count: (path) => (path === undefined ? [...counts.values()].reduce((a, b) => a + b, 0) : (counts.get(path) ?? 0)),
    waitFor,
    async waitForCount(path, n, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while ((counts.get(path) ?? 0) < n) {
        if (Date.now() > deadline) throw new Error(`receiver: ${counts.get(path) ?? 0} of ${n} deliveries on ${path} within ${timeoutMs} ms`);
        await Bun.sleep(20);
      }
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface FastReceiver {
  port: number;
  count(): number;
  /** Deliveries whose signature did not verify (only counted when a secret is set). */
  rejected(): number;
  close(): Promise<void>;
}

/**
 * The receiver for load (benchmark, demo): Bun.serve with TLS, 200 to every request, signatures verified with
 * the client's WebhookVerifier when secrets are given. No hostile behaviours (startReceiver has those).
 */
export function startFastReceiver(opts: {
  cert: string;
  key: string;
  port?: number;
  secrets?: string[];
  /** Told of each delivery (`verified` null when no secret is set); the benchmark leaves it out. */
  onDelivery?: (d: { headers: Record<string, string>; body: string; verified: boolean | null }) => void;
}): FastReceiver {
  const verifier = verifierOf(opts.secrets ?? []);
  let received = 0;
  let bad = 0;
  const server = Bun.serve({
    port: opts.port ?? 0,
    hostname: "127.0.0.1",
    tls: { cert: opts.cert, key: opts.key },
    async fetch(req) {
      const body = await req.text();
      received++;
      let verified: boolean | null = null;
      if (verifier) {
        verified = verifiedBy(verifier, body, Object.fromEntries(req.headers));
        if (!verified) bad++;
      }
      opts.onDelivery?.({ headers: Object.fromEntries(req.headers), body, verified });
      return new Response("ok");
    },
  });
  return {
    port: server.port ?? 0,
    count: () => received,
    rejected: () => bad,
    async close() {
      await server.stop(true);
    },
  };
}
