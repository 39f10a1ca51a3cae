// A client for the java-tron full-node HTTP API (TronGrid or any node). It speaks POST with JSON bodies, which every
// java-tron version accepts, retries transient failures with capped exponential backoff, and turns the node's ways
// of saying "I don't have that yet" (`{}`, `[]`, a transaction-info list shorter than the block) into `null` — never
// into an empty block, which would make the matcher skip real transfers.
import { isBlock, type TronBlock, type TronTransactionInfo } from "./types.ts";
import { backoffDelay } from "../timing.ts";

export interface TronClientOptions {
  baseUrl: string;
  /** Sent as TRON-PRO-API-KEY (TronGrid). */
  apiKey?: string;
  /** Ask for base58 addresses and plain-text asset names (the node converts; the decoder accepts both forms). */
  visible?: boolean;
  /** Attempts per request, the first included. */
  attempts?: number;
  /** First backoff delay; doubled per attempt up to maxBackoffMs, with jitter. */
  backoffMs?: number;
  maxBackoffMs?: number;
  timeoutMs?: number;
  /** Called after every HTTP exchange (metrics: node reachability and latency). */
  observe?: (endpoint: string, ok: boolean, seconds: number) => void;
  fetch?: typeof fetch;
}

export class TronNodeError extends Error {
  constructor(
    message: string,
    readonly endpoint: string,
    readonly status?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "TronNodeError";
  }
}

/** java-tron caps getblockbylimitnext at 100 blocks per call. */
export const MAX_BLOCKS_PER_RANGE = 100;

const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

/** The answers of a node deployed without the solidity API (no such path, or the method refused there). */
const NO_API_STATUS = new Set([404, 405, 501]);

/**
 * Whether `err` says the node has no solidity API at all, as opposed to failing for now (a 429, a 5xx, a timeout, a
 * refused connection): only the former may make finality the head minus confirmations.
 */
export function lacksSolidityApi(err: unknown): boolean {
  return err instanceof TronNodeError && err.status !== undefined && NO_API_STATUS.has(err.status);
}

export class TronClient {
  private readonly baseUrl: string;
  private readonly headers: Record<string, string>;
  private readonly visible: boolean;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly timeoutMs: number;
  private readonly observe: TronClientOptions["observe"];
  private readonly doFetch: typeof fetch;

  constructor(opts: TronClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.headers = { "content-type": "application/json", accept: "application/json" };
    if (opts.apiKey) this.headers["TRON-PRO-API-KEY"] = opts.apiKey;
    this.visible = opts.visible ?? true;
    this.attempts = Math.max(1, opts.attempts ?? 5);
    this.backoffMs = opts.backoffMs ?? 200;
    this.maxBackoffMs = opts.maxBackoffMs ?? 5_000;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.observe = opts.observe;
    this.doFetch = opts.fetch ?? fetch;
  }

  /** The head block, with its transactions. */
  async getNowBlock(): Promise<TronBlock> {
    const body = await this.call("getnowblock", {});
    if (!isBlock(body)) throw new TronNodeError("getnowblock returned no block", "getnowblock");
    return body;
  }

  /**
   * The solidified head block (/walletsolidity/getnowblock), tried once: the caller tells a node without the
   * solidity API (lacksSolidityApi) from one failing for now, and retries the latter with its own backoff.
   */
  async getSolidifiedNowBlock(): Promise<TronBlock> {
    const body = await this.call("getnowblock", {}, { api: "walletsolidity", attempts: 1 });
    if (!isBlock(body)) throw new TronNodeError("walletsolidity/getnowblock returned no block", "walletsolidity/getnowblock");
    return body;
  }

  /**
   * Block `num` without its transactions from the node's solidified view (/walletsolidity/getblock), or null when
   * it is not solidified there: what the solidified stream checks a run's newest block against.
   */
  async getSolidifiedBlockHeader(num: number): Promise<TronBlock | null> {
    const body = await this.call("getblock", { id_or_num: String(num), detail: false }, { api: "walletsolidity" });
    return isBlock(body) ? body : null;
  }

  /** Block `num` with its transactions, or null when the node has not reached it. */
  async getBlockByNum(num: number): Promise<TronBlock | null> {
    const body = await this.call("getblockbynum", { num });
    return isBlock(body) ? body : null;
  }

  /** Block by number or id through /wallet/getblock (detail=true), or null when the node does not have it. */
  async getBlock(idOrNum: string | number): Promise<TronBlock | null> {
    const body = await this.call("getblock", { id_or_num: String(idOrNum), detail: true });
    return isBlock(body) ? body : null;
  }

  /** Block `num` without its transactions (fork checks need only ids), or null when the node does not have it. */
  async getBlockHeader(num: number): Promise<TronBlock | null> {
    const body = await this.call("getblock", { id_or_num: String(num), detail: false });
    return isBlock(body) ? body : null;
  }

  /**
   * Blocks [start, end) in order, at most MAX_BLOCKS_PER_RANGE. The list stops early where the node's chain ends;
   * a gap or a disorder in what the node returned is cut off there so the caller never skips a block.
   */
  async getBlockRange(start: number, end: number): Promise<TronBlock[]> {
    const stop = Math.min(end, start + MAX_BLOCKS_PER_RANGE);
    if (stop <= start) return [];
    const body = (await this.call("getblockbylimitnext", { startNum: start, endNum: stop })) as { block?: unknown[] };
    const blocks = Array.isArray(body?.block) ? body.block : [];
    const out: TronBlock[] = [];
    for (const b of blocks) {
      if (!isBlock(b) || b.block_header.raw_data.number !== start + out.length) break;
      out.push(b);
    }
    return out;
  }

  /**
   * Every transaction info of block `num`, or null when the node has not produced them all yet (its count must
   * equal the block's transaction count, which the caller knows).
   */
  async getTransactionInfoByBlockNum(num: number, expectedCount: number): Promise<TronTransactionInfo[] | null> {
    const body = await this.call("gettransactioninfobyblocknum", { num });
    const infos = Array.isArray(body) ? (body as TronTransactionInfo[]) : [];
    if (infos.length !== expectedCount) return null;
    return infos;
  }

  private async call(
    path: string,
    params: Record<string, unknown>,
    opts: { api?: "wallet" | "walletsolidity"; attempts?: number } = {},
  ): Promise<unknown> {
    const api = opts.api ?? "wallet";
    const url = `${this.baseUrl}/${api}/${path}`;
    // Metrics and errors name solidity endpoints by their prefix; full-node ones keep their bare names.
    const endpoint = api === "wallet" ? path : `${api}/${path}`;
    const payload = JSON.stringify({ ...params, visible: this.visible });
    let lastError: unknown;
    const attempts = opts.attempts ?? this.attempts;
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt > 0) await Bun.sleep(this.delay(attempt));
      const started = performance.now();
      try {
        const res = await this.doFetch(url, {
          method: "POST",
          headers: this.headers,
          body: payload,
          signal: AbortSignal.timeout(this.timeoutMs),
        });
        if (!res.ok) {
          await res.arrayBuffer().catch(() => undefined);
          const err = new TronNodeError(`${endpoint} answered HTTP ${res.status}`, endpoint, res.status);
          this.observe?.(endpoint, false, (performance.now() - started) / 1000);
          if (!RETRYABLE_STATUS.has(res.status)) throw err;
          lastError = err;
          continue;
        }
        const body = parseNodeJson(await res.text());
        // java-tron reports failures inside a 200: {"Error": "..."}.
        if (body && typeof body === "object" && !Array.isArray(body) && "Error" in body) {
          this.observe?.(endpoint, false, (performance.now() - started) / 1000);
          lastError = new TronNodeError(`${endpoint}: ${String((body as { Error: unknown }).Error)}`, endpoint, res.status);
          continue;
        }
        this.observe?.(endpoint, true, (performance.now() - started) / 1000);
        return body;
      } catch (err) {
        if (err instanceof TronNodeError) {
          if (err.status !== undefined && !RETRYABLE_STATUS.has(err.status)) throw err;
        } else {
          this.observe?.(endpoint, false, (performance.now() - started) / 1000);
        }
        lastError = err;
      }
    }
    if (lastError instanceof TronNodeError) throw lastError;
    // Refused, reset, timed out: one error type for "the node did not answer", so callers can tell it from their own.
    const reason = lastError instanceof Error ? lastError.message : String(lastError);
    throw new TronNodeError(`${endpoint} failed: ${reason}`, endpoint, undefined, { cause: lastError });
  }

  private delay(attempt: number): number {
    return backoffDelay(attempt, this.backoffMs, this.maxBackoffMs, true);
  }
}

// java-tron prints TRX and TRC-10 amounts (int64) as bare JSON numbers; a double holds integers exactly only up to
// 2^53, and TRC-10 tokens with large supplies really move more. An answer holding such an amount is parsed again
// with long amounts quoted, so the decoder sees their exact digits (it takes an amount as a number or a decimal
// string). Only then: scanning every answer's text for them cost the catch-up about a fifth of the matcher's CPU.
const LONG_AMOUNT = /("amount":\s*)(\d{16,})/g;

/** JSON.parse of a node's answer; a block (or batch of blocks) with an amount past 2^53 keeps its exact digits. */
export function parseNodeJson(text: string): unknown {
  const body: unknown = JSON.parse(text);
  return hasInexactAmount(body) ? JSON.parse(text.replace(LONG_AMOUNT, '$1"$2"')) : body;
}

function hasInexactAmount(body: unknown): boolean {
  if (!body || typeof body !== "object") return false;
  const batch = (body as { block?: unknown }).block;
  const blocks = (Array.isArray(batch) ? batch : [body]) as Partial<TronBlock>[];
  for (const block of blocks) {
    if (!Array.isArray(block?.transactions)) continue;
    for (const tx of block.transactions) {
      const amount = tx?.raw_data?.contract?.[0]?.parameter?.value?.amount;
      if (typeof amount === "number" && !Number.isSafeInteger(amount)) return true;
    }
  }
  return false;
}
