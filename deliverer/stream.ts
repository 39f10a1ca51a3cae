// DeliveryService.StreamEvents: a key's events, oldest first, for internal platform services that read them over
// gRPC or Connect instead of receiving webhooks. It reads the delivery log in PostgreSQL (store.streamPage) in
// stream order; each event carries its cursor, and a client that reconnects with the last cursor it received
// resumes right after it (at least once: an event whose cursor was not received yet comes again). A consumer that
// falls behind only makes the reads come in full pages until it has caught up: nothing is buffered or dropped.
//
// New events are found by polling: at once when this process made them (Enqueue and test events wake the
// streams), otherwise every `pollMs` (events made by another replica).
//
// Authentication: the API key in the `authorization: Bearer whk_…` metadata, resolved through the registry as the
// gateway does; checked again every `authRecheckMs` while the stream lasts, so a revoked key's stream ends. A key may
// hold its `streams` quota of streams open in this process at once (common/quotas.ts); one more is quota_exceeded.
import { create } from "@bufbuild/protobuf";
import { createClient, type HandlerContext, type Transport } from "@connectrpc/connect";
import { ApiError, invalidRequest, isChainId } from "../common/contract/index.ts";
import { toConnectError } from "../common/rpc-errors.ts";
import { isId } from "../common/ids.ts";
import { Notifier } from "../common/timing.ts";
import { bearerToken } from "../common/internal-auth.ts";
import { StreamEventsResponseSchema, type StreamEventsRequest, type StreamEventsResponse } from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import { ApiKeyService, type ApiKey } from "../gen/webhooks/registry/v1/registry_pb.ts";
import { QUOTA_DEFAULTS, quotaExceeded } from "../common/quotas.ts";
import { toEventView } from "./payload.ts";
import type { DelivererStore } from "./db/store.ts";
import type { StreamFilter, StreamPosition, StreamRow } from "./db/types.ts";

export interface StreamOptions {
  /** Poll interval for events made elsewhere (default 200 ms). */
  pollMs?: number;
  /** Rows read per query (default 2,000). */
  batch?: number;
  /** Most events per streamed message (default 250). */
  messageEvents?: number;
  /** How often the key is checked again during a stream (default 5 s). */
  authRecheckMs?: number;
  /** Open streams per key in this process unless the key has its own quota (QUOTA_STREAMS; default 16). */
  perKey?: number;
}

/** Wakes waiting streams when this process has made events. */
export class StreamWaker extends Notifier {}

const START: StreamPosition = { xid: "0", seq: 0 };
/** First wait before looking again for rows held back by a running transaction. */
const HELD_MIN_MS = 10;
const CURSOR = /^(\d{1,20})\.(\d{1,19})$/;

export function formatCursor(p: StreamPosition): string {
  return `${p.xid}.${p.seq}`;
}

/** "" is the start; anything but "<xid>.<seq>" is invalid_request. */
export function parseCursor(cursor: string): StreamPosition {
  if (cursor === "") return START;
  const m = CURSOR.exec(cursor);
  const seq = m ? Number(m[2]) : NaN;
  if (!m || !Number.isSafeInteger(seq)) throw invalidRequest("cursor is not a cursor this stream gave.", "cursor");
  return { xid: m[1]!, seq };
}

function checkFilter(req: StreamEventsRequest, keyId: string): StreamFilter {
  req.subscriptionIds.forEach((id, i) => {
    if (!isId("sub", id)) throw new ApiError("invalid_request", "subscription_ids must be subscription ids.", { param: `subscriptionIds/${i}` });
  });
  req.chainIds.forEach((c, i) => {
    if (!isChainId(c)) throw new ApiError("invalid_chain", `Unknown chain "${c}".`, { chain: c, param: `chainIds/${i}` });
  });
  return { keyId, subscriptionIds: [...new Set(req.subscriptionIds)], kinds: [...new Set(req.kinds)], chainIds: [...new Set(req.chainIds)] };
}

function bearer(header: string | null): string {
  const token = bearerToken(header);
  if (token === undefined) throw new ApiError("unauthorized", "StreamEvents needs the API key as `authorization: Bearer whk_…` metadata.");
  return token;
}

export function streamEventsHandler(store: DelivererStore, registry: Transport, waker: StreamWaker, opts: StreamOptions = {}) {
  const keys = createClient(ApiKeyService, registry);
  const pollMs = opts.pollMs ?? 200;
  const batch = opts.batch ?? 2_000;
  const perMessage = Math.max(1, opts.messageEvents ?? 250);
  const recheckMs = opts.authRecheckMs ?? 5_000;
  const defaultPerKey = opts.perKey ?? QUOTA_DEFAULTS.streams.value;
  const open = new Map<string, number>();

  async function keyOf(secret: string): Promise<ApiKey> {
    const res = await keys.resolveApiKey({ secret });
    if (!res.valid || !res.key) throw new ApiError("unauthorized", "The API key is unknown or revoked.");
    return res.key;
  }

  /** Takes one of the key's stream places; the returned function gives it back. */
  function admit(key: ApiKey): () => void {
    const limit = key.quotas?.streams ?? defaultPerKey;
    const n = open.get(key.id) ?? 0;
    if (n >= limit) throw quotaExceeded("streams", limit);
    open.set(key.id, n + 1);
    return () => {
      const left = (open.get(key.id) ?? 1) - 1;
      if (left <= 0) open.delete(key.id);
      else open.set(key.id, left);
    };
  }

  return async function* streamEvents(req: StreamEventsRequest, ctx: HandlerContext): AsyncGenerator<StreamEventsResponse> {
    let release: (() => void) | undefined;
    try {
      const secret = bearer(ctx.requestHeader.get("authorization"));
      const key = await keyOf(secret);
      const filter = checkFilter(req, key.id);
      release = admit(key);
      let position = parseCursor(req.cursor);
      let checkedAt = Date.now();
      let next: Promise<StreamRow[]> | undefined;
      let heldMs = 0;
      while (!ctx.signal.aborted) {
        const rows = await (next ?? store.streamPage(filter, position, batch));
        next = undefined;
        if (rows.length > 0) {
          const last = rows.at(-1)!;
          position = { xid: last.xid, seq: last.seq };
          // A full page means the reader is behind: the next page is read while this one is encoded and sent, so
          // PostgreSQL (another process) works beside this one instead of in turn with it.
          if (rows.length === batch) {
            next = store.streamPage(filter, position, batch);
            // Observed here and awaited on the next turn; a stream that ends first leaves no unhandled rejection.
            next.catch(() => {});
          }
          // Several events per message: one frame (and one flush) per few hundred events instead of per event. Not
          // a whole page: a page of 2,000 made a message of about 2 MB, which the encoder grows by doubling and the
          // consumer gathers into one buffer; a profile of the bench (bench/delivery-queues.ts) found those copies
          // and the garbage of buffers that size costing more than the frames a smaller message adds.
          for (let i = 0; i < rows.length; i += perMessage) {
            const events = rows.slice(i, i + perMessage).map((row) => ({ cursor: formatCursor({ xid: row.xid, seq: row.seq }), event: toEventView(row) }));
            yield create(StreamEventsResponseSchema, { events });
          }
        }
        if (Date.now() - checkedAt >= recheckMs) {
          await keyOf(secret);
          checkedAt = Date.now();
        }
        if (rows.length < batch) {
          // A short page is the end of the log, or rows held back behind a transaction still running (the horizon
          // above is the cluster's oldest one): those show the moment it ends, so they are looked for again soon,
          // backing off from 10 ms to the poll interval while it lasts.
          heldMs = (await store.streamHeldBack(filter, position)) ? Math.min(pollMs, Math.max(HELD_MIN_MS, heldMs * 2)) : 0;
          await waker.wait(heldMs || pollMs, ctx.signal);
        }
      }
    } catch (err) {
      // A streaming handler's errors surface while the stream is read, past the router's ApiError interceptor.
      if (err instanceof ApiError) throw toConnectError(err);
      throw err;
    } finally {
      release?.();
    }
  };
}
