// The whole stack for the event API tests: startStack with the deliverer, a real HTTPS receiver (test CA trusted
// through DELIVERY_CA_FILE, SSRF_ALLOW_CIDRS=127.0.0.1/32) and a short retry schedule.
import { startStack, type Stack, type StackOptions } from "./stack.ts";
import { createTestPki, type TestPki } from "../../tools/receiver/certs.ts";
import { startReceiver, type Receiver } from "../../tools/receiver/server.ts";

export interface EventsStack {
  stack: Stack;
  receiver: Receiver;
  pki: TestPki;
  stop(): Promise<void>;
}

export async function startEventsStack(opts: StackOptions & { env?: Record<string, string> } = {}): Promise<EventsStack> {
  const pki = createTestPki();
  const receiver = await startReceiver({ cert: pki.cert, key: pki.key });
  try {
    const stack = await startStack({
      ...opts,
      deliverer: opts.deliverer ?? { targetTtlMs: 0, worker: { holdCheckMs: 200 } },
      env: {
        DELIVERY_CA_FILE: pki.caFile,
        SSRF_ALLOW_CIDRS: "127.0.0.1/32",
        RETRY_SCHEDULE: "0,30ms,30ms,30ms,30ms,30ms,30ms",
        DELIVERY_TIMEOUT_MS: "2000",
        ...opts.env,
      },
    });
    return {
      stack,
      receiver,
      pki,
      async stop() {
        await stack.stop();
        await receiver.close();
      },
    };
  } catch (err) {
    await receiver.close();
    throw err;
  }
}

export interface HttpResult<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
}

/** One JSON call to the gateway; `body: undefined` sends no body at all. */
export async function call<T = Record<string, unknown>>(
  baseUrl: string,
  key: string | undefined,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<HttpResult<T>> {
  const h: Record<string, string> = { ...headers };
  if (key) h.authorization = `Bearer ${key}`;
  if (body !== undefined) h["content-type"] ??= "application/json";
  const res = await fetch(baseUrl + path, {
    method,
    headers: h,
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : null) as T };
}
