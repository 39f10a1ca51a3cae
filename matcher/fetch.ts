// Reading blocks for the stream: a block with its transaction infos (waiting a little for a node still writing
// them), decoded into transfers. Catch-up ranges run in a worker thread (fetch-worker.ts) so JSON parsing and
// decoding of the next batch overlap with matching and delivery of the current one on another core; the tip (one
// block every 3 s) is read on the stream's own thread.
import { blockNeedsTransactionInfo, decodeBlock, type DecodedTransfer } from "./decode.ts";
import { TronClient, type TronClientOptions } from "./tron-client.ts";
import type { TronBlock, TronTransactionInfo } from "./tron-types.ts";

export interface DecodedBlock {
  number: number;
  blockId: string;
  parentHash: string;
  timestampMs: number;
  transfers: DecodedTransfer[];
}

export type Observation = [endpoint: string, ok: boolean, seconds: number];

const INFO_RETRY_MS = 250;
const INFO_ATTEMPTS = 12;

/** The block's transaction infos when it needs them (null when it has no contract call), waiting for a lagging node. */
export async function infosFor(client: TronClient, block: TronBlock): Promise<TronTransactionInfo[] | null> {
  if (!blockNeedsTransactionInfo(block)) return null;
  const num = block.block_header.raw_data.number;
  const count = block.transactions?.length ?? 0;
  for (let attempt = 0; attempt < INFO_ATTEMPTS; attempt++) {
    const infos = await client.getTransactionInfoByBlockNum(num, count);
    if (infos) return infos;
    await Bun.sleep(INFO_RETRY_MS);
  }
  throw new Error(`transaction infos of block ${num} are not complete yet`);
}

export function decoded(block: TronBlock, infos: TronTransactionInfo[] | null): DecodedBlock {
  const h = block.block_header.raw_data;
  return { number: h.number, blockId: block.blockID, parentHash: h.parentHash, timestampMs: h.timestamp, transfers: decodeBlock(block, infos) };
}

export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Blocks [start, end) decoded, stopping before the first block whose infos are not complete yet. */
export async function fetchDecodedRange(client: TronClient, start: number, end: number, concurrency: number): Promise<DecodedBlock[]> {
  const blocks = await client.getBlockRange(start, end);
  const fetched = await mapLimit(blocks, concurrency, async (b) => {
    try {
      return decoded(b, await infosFor(client, b));
    } catch {
      return null;
    }
  });
  const out: DecodedBlock[] = [];
  for (const f of fetched) {
    if (!f) break;
    out.push(f);
  }
  return out;
}

export interface RangeSource {
  fetch(start: number, end: number): Promise<{ blocks: DecodedBlock[]; observations: Observation[] }>;
  close(): void;
}

/** Messages between the stream and fetch-worker.ts. */
export type WorkerRequest = { id: number; start: number; end: number; client: Omit<TronClientOptions, "observe" | "fetch">; concurrency: number };
export type WorkerReply = { id: number; blocks?: DecodedBlock[]; observations: Observation[]; error?: string };

/** Ranges fetched and decoded in a worker thread. */
export function workerRangeSource(client: Omit<TronClientOptions, "observe" | "fetch">, concurrency: number): RangeSource {
  const worker = new Worker(new URL("./fetch-worker.ts", import.meta.url).href);
  let seq = 0;
  const pending = new Map<number, { resolve: (r: { blocks: DecodedBlock[]; observations: Observation[] }) => void; reject: (e: Error) => void }>();
  worker.onmessage = (ev: MessageEvent<WorkerReply>) => {
    const p = pending.get(ev.data.id);
    if (!p) return;
    pending.delete(ev.data.id);
    if (ev.data.error !== undefined) p.reject(new Error(ev.data.error));
    else p.resolve({ blocks: ev.data.blocks ?? [], observations: ev.data.observations });
  };
  worker.onerror = (ev) => {
    for (const p of pending.values()) p.reject(new Error(`block fetch worker failed: ${ev.message}`));
    pending.clear();
  };
  return {
    fetch(start, end) {
      const id = ++seq;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        worker.postMessage({ id, start, end, client, concurrency } satisfies WorkerRequest);
      });
    },
    close() {
      for (const p of pending.values()) p.reject(new Error("block fetch worker closed"));
      pending.clear();
      worker.terminate();
    },
  };
}

/** Ranges fetched and decoded on the calling thread (tests, or where workers are unwanted). */
export function inThreadRangeSource(client: TronClient, concurrency: number): RangeSource {
  return {
    async fetch(start, end) {
      return { blocks: await fetchDecodedRange(client, start, end, concurrency), observations: [] };
    },
    close() {},
  };
}
