// The fault run's HTTPS endpoint: one Bun server with the test CA's certificate, a path per subscription, each path
// answering as told (`ok` 204, `fail` 500, `hang` never answering until the deliverer gives up). Every request is
// recorded with the status it was answered with, so "delivered" means a 2xx answer, not merely a request seen.
import { Webhook } from "standardwebhooks";

export type ReceiverMode = "ok" | "fail" | "hang";

export interface Arrival {
  path: string;
  webhookId: string;
  body: string;
  receivedAt: number;
  /** The status answered; null when the request was held (hang) and never answered. */
  status: number | null;
  verified: boolean;
}

export interface ChaosReceiver {
  port: number;
  url(path: string): string;
  setSecret(path: string, secret: string): void;
  setMode(path: string, mode: ReceiverMode): void;
  arrivals(): Arrival[];
  close(): Promise<void>;
}

export function startChaosReceiver(tls: { cert: string; key: string }): ChaosReceiver {
  const modes = new Map<string, ReceiverMode>();
  const signers = new Map<string, Webhook>();
  const arrivals: Arrival[] = [];
  const held = new Set<() => void>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls,
    idleTimeout: 60,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const body = await req.text();
      const headers = Object.fromEntries(req.headers);
      let verified = false;
      try {
        signers.get(path)?.verify(body, headers);
        verified = signers.has(path);
      } catch {
        verified = false;
      }
      const mode = modes.get(path) ?? "ok";
      const arrival: Arrival = { path, webhookId: headers["webhook-id"] ?? "", body, receivedAt: Date.now(), status: null, verified };
      arrivals.push(arrival);
      if (mode === "hang") {
        // Held until the deliverer's timeout aborts it (or the receiver closes).
        await new Promise<void>((resolve) => {
          held.add(resolve);
          req.signal.addEventListener("abort", () => resolve());
        });
        return new Response(null, { status: 503 });
      }
      arrival.status = mode === "ok" ? 204 : 500;
      return new Response(mode === "ok" ? null : "failing on purpose", { status: arrival.status });
    },
  });
  return {
    port: server.port!,
    url: (path) => `https://127.0.0.1:${server.port}${path}`,
    setSecret: (path, secret) => void signers.set(path, new Webhook(secret)),
    setMode: (path, mode) => void modes.set(path, mode),
    arrivals: () => [...arrivals],
    async close() {
      for (const release of held) release();
      await server.stop(true);
    },
  };
}
