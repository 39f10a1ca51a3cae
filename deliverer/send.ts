// One delivery attempt: resolve and judge the destination (SSRF policy, on every attempt), connect to the judged
// address only (TLS SNI and certificate still checked against the host name), POST, read at most 4,096 bytes of
// the answer (decoded no further than that: deliverer/answer-body.ts), all within one deadline. Redirects are never
// followed.
import { readFileSync } from "node:fs";
import { DestinationError, resolvePinned, type SsrfPolicy } from "../common/ssrf.ts";
import { retryAfterOf } from "../common/retry-policy.ts";
import { readAnswer } from "./answer-body.ts";
import { connectionResends } from "./metrics.ts";
import { RESPONSE_BODY_LIMIT } from "../common/contract/index.ts";
import { MemoMap } from "../common/timing.ts";

export interface AttemptRequest {
  /** An https destination's URL ("" for a queue destination). */
  url: string;
  body: string;
  /** The Standard Webhooks headers (deliverer/sign.ts); queue senders carry them as message headers. */
  headers: Record<string, string>;
  /** A queue destination (amqp, nats); absent for https. */
  queue?: QueueTarget;
}

/**
 * The headers of an attempt a queue message carries as its own headers (AMQP properties, NATS headers): the
 * Standard Webhooks ones and the subscription, so a consumer verifies it as a webhook receiver does.
 */
export const QUEUE_MESSAGE_HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature", "x-subscription-id"] as const;

/** Where a queue attempt goes: the registered broker (its name and connection URL) and the exchange or subject. */
export interface QueueTarget {
  type: "amqp" | "nats";
  broker: string;
  brokerUrl: string;
  exchange: string;
  routingKey: string;
  subject: string;
}

export interface AttemptOutcome {
  ok: boolean;
  /** The HTTP status, or null when the attempt ended without a response (timeout, refused, TLS, SSRF). */
  status: number | null;
  /** The first 4,096 bytes of the response body, or a short reason when there was no response. */
  body: string;
  /** A Retry-After on 429/503, in milliseconds. */
  retryAfterMs: number | null;
  /** What went wrong, for metrics: "http", "timeout", "connect", "tls", "ssrf", "dns", "broker", "aborted". */
  failure: string | null;
  durationMs: number;
}

/** A queue attempt's outcome before its duration is added (createRoutingSender, senders.ts, times every attempt). */
export type QueueOutcome = Omit<AttemptOutcome, "durationMs">;

/** A queue attempt that failed without a broker's acceptance: `body` is the short reason, `failure` its metric label. */
export function queueFailure(body: string, failure = "broker"): QueueOutcome {
  return { ok: false, status: null, body, retryAfterMs: null, failure };
}

export interface SenderOptions {
  policy: SsrfPolicy;
  timeoutMs: number;
  /** Extra PEM CA bundle trusted in addition to the system roots (DELIVERY_CA_FILE). */
  caFile?: string | undefined;
}

export interface Sender {
  send(req: AttemptRequest, signal?: AbortSignal): Promise<AttemptOutcome>;
}

/** The longest prefix of `bytes` (at most `limit` long) that ends on a UTF-8 character boundary, decoded. */
export function truncateUtf8(bytes: Uint8Array, limit = RESPONSE_BODY_LIMIT): string {
  let end = Math.min(bytes.length, limit);
  if (end < bytes.length) {
    // Back off over continuation bytes (10xxxxxx) so the character that straddles the cut is dropped whole.
    while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  }
  return new TextDecoder().decode(bytes.subarray(0, end));
}

/** The connection was closed or reset before any answer came. */
function isReset(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return /ECONNRESET|ConnectionClosed|socket hang up|closed unexpectedly/i.test(`${e?.code ?? ""} ${e?.message ?? ""}`);
}

function classify(err: unknown): { failure: string; reason: string } {
  const e = err as { code?: string; name?: string; message?: string };
  const code = e?.code ?? "";
  const text = `${code} ${e?.message ?? ""}`;
  if (/ECONNREFUSED|ConnectionRefused/i.test(text)) return { failure: "connect", reason: "connection refused" };
  if (isReset(err)) return { failure: "connect", reason: "connection reset by the destination" };
  if (/CERT|TLS|SSL|SELF_SIGNED|UNABLE_TO_VERIFY|ALTNAME|HANDSHAKE/i.test(text)) {
    return { failure: "tls", reason: `TLS error: ${code || e?.message || "handshake failed"}` };
  }
  if (/ETIMEDOUT|ConnectionTimeout/i.test(text)) return { failure: "connect", reason: "connection timed out" };
  if (/EHOSTUNREACH|ENETUNREACH/i.test(text)) return { failure: "connect", reason: "destination unreachable" };
  return { failure: "connect", reason: `connection failed: ${code || e?.message || "unknown error"}` };
}

// Verification failures that another trust store might fix (not name mismatches or expired certificates).
const UNTRUSTED_CHAIN = /UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT|CERT_UNTRUSTED/;

type TrustStore = "system" | "extra";

export function createSender(opts: SenderOptions): Sender {
  // DELIVERY_CA_FILE is trusted in addition to the system roots. Handing fetch one bundle of both costs time on
  // every request (the TLS options are part of the connection-pool key), so each destination host is tried with
  // the system roots first and, if its chain is not trusted there, with the extra CA alone; the store that worked
  // is remembered per host. A handshake fails before any byte of the request is sent, so nothing is sent twice.
  const extraCa = opts.caFile ? readFileSync(opts.caFile, "utf8") : undefined;
  const storeByHost = new MemoMap<string, TrustStore>(10_000);
  const tlsFor = (servername: string | undefined, store: TrustStore) => ({
    ...(servername ? { serverName: servername } : {}),
    ...(store === "extra" && extraCa ? { ca: extraCa } : {}),
    rejectUnauthorized: true,
  });

  return {
    async send(req, outer) {
      const started = performance.now();
      const done = (o: Omit<AttemptOutcome, "durationMs">): AttemptOutcome => ({ ...o, durationMs: performance.now() - started });
      const url = new URL(req.url);
      const controller = new AbortController();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, opts.timeoutMs);
      const onOuter = () => controller.abort();
      outer?.addEventListener("abort", onOuter, { once: true });
      try {
        let pinned;
        try {
          pinned = await resolvePinned(opts.policy, url.hostname);
        } catch (err) {
          if (err instanceof DestinationError) {
            const failure = err.kind === "blocked" ? "ssrf" : "dns";
            const reason = err.kind === "blocked" ? `ssrf_blocked: ${err.ip} is in ${err.cidr}` : err.message;
            return done({ ok: false, status: null, body: reason, retryAfterMs: null, failure });
          }
          throw err;
        }
        if (timedOut) return done({ ok: false, status: null, body: timeoutReason(opts.timeoutMs), retryAfterMs: null, failure: "timeout" });
        // Connect to the judged address only; the Host header, SNI and certificate check keep the name.
        const target = new URL(url.href);
        target.hostname = pinned.family === 6 ? `[${pinned.address}]` : pinned.address;
        const hostHeader = url.port ? `${url.hostname}:${url.port}` : url.hostname;
        const servername = url.hostname.startsWith("[") || /^\d+\.\d+\.\d+\.\d+$/.test(url.hostname) ? undefined : url.hostname;
        const send = (store: TrustStore, keepalive: boolean) =>
          fetch(target, {
            method: "POST",
            body: req.body,
            // Identity asked for, and no decompression by fetch: it would inflate a whole answer before the limit
            // applies (a 211-byte brotli body is 256 MB); readAnswer decodes as far as the limit only.
            headers: { ...req.headers, host: hostHeader, "accept-encoding": "identity" },
            decompress: false,
            redirect: "manual",
            signal: controller.signal,
            keepalive,
            tls: tlsFor(servername, store),
          });
        // A kept-alive connection can be closed by the destination (its idle timeout) just as a request goes out on
        // it: the request fails with a reset before any answer. As HTTP clients do, it is sent once more at once, on
        // a new connection, inside the same attempt and deadline, instead of failing the attempt and waiting for the
        // retry schedule (the demo's receiver cut ~3% of its deliveries this way, each then a second later). Should the
        // destination have taken the first in after all, the second is one more delivery of the same webhook-id, as
        // any retry is; a destination that resets every request still fails the attempt, after two tries.
        const post = async (store: TrustStore): Promise<Response> => {
          try {
            return await send(store, true);
          } catch (err) {
            if (controller.signal.aborted || !isReset(err)) throw err;
            connectionResends.inc();
            return await send(store, false);
          }
        };
        const hostKey = `${url.host}|${pinned.address}`;
        const first: TrustStore = storeByHost.get(hostKey) ?? "system";
        let res: Response;
        try {
          res = await post(first);
        } catch (err) {
          if (!extraCa || !UNTRUSTED_CHAIN.test(String((err as { code?: string }).code ?? err))) throw err;
          const other: TrustStore = first === "system" ? "extra" : "system";
          res = await post(other);
          storeByHost.set(hostKey, other);
        }
        // A small declared body sent as is is read whole (cheaper than a stream reader; the framing bounds it);
        // anything else is read in chunks, decoded if it was compressed, and cut off after the limit.
        const declared = Number(res.headers.get("content-length") ?? NaN);
        const encoding = res.headers.get("content-encoding");
        const identity = encoding === null || /^\s*identity\s*$/i.test(encoding);
        const bytes =
          identity && declared <= RESPONSE_BODY_LIMIT
            ? new Uint8Array(await res.arrayBuffer())
            : await readAnswer(res.body, encoding, RESPONSE_BODY_LIMIT);
        const body = truncateUtf8(bytes);
        const ok = res.status >= 200 && res.status < 300;
        const retryAfterMs = retryAfterOf(res.status, res.headers.get("retry-after"));
        return done({ ok, status: res.status, body, retryAfterMs, failure: ok ? null : "http" });
      } catch (err) {
        if (timedOut) return done({ ok: false, status: null, body: timeoutReason(opts.timeoutMs), retryAfterMs: null, failure: "timeout" });
        if (outer?.aborted) return done({ ok: false, status: null, body: "attempt aborted by shutdown", retryAfterMs: null, failure: "aborted" });
        const { failure, reason } = classify(err);
        return done({ ok: false, status: null, body: reason, retryAfterMs: null, failure });
      } finally {
        clearTimeout(timer);
        outer?.removeEventListener("abort", onOuter);
      }
    },
  };
}

export function timeoutReason(ms: number): string {
  return `timeout: no complete response within ${ms} ms`;
}
