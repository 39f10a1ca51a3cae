// Reading blocks for the stream: a block with its transaction infos (waiting a little for a node still writing
// them), decoded into transfers. (Decoding catch-up ranges on a worker thread was measured on this 2-core machine
// and lost: structured-cloning the transfers back cost more than parsing and decoding in place.)
import { blockNeedsTransactionInfo, decodeBlock, type DecodedTransfer } from "./decode.ts";
import type { TronClient } from "../common/tron-node/client.ts";
import { decodeActivities } from "./activity/decode.ts";
import type { ActivityDecodeOptions, DecodedActivity } from "./activity/types.ts";
import type { TronBlock, TronTransactionInfo } from "../common/tron-node/types.ts";

export interface DecodedBlock {
  number: number;
  blockId: string;
  parentHash: string;
  timestampMs: number;
  /** Every transfer of the block, successful or not (consumers filter by `result`). */
  transfers: DecodedTransfer[];
  /** The account activity of its successful transactions (approvals, permissions, resources, blacklist events). */
  activities: DecodedActivity[];
  /** Every transaction id of the block: the solidified stream clears pending drops a block re-includes. */
  txIds: string[];
}

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

/**
 * What the matcher reads of a block: its transfers, and its account activity unless `activity` is null (a chain
 * read for transfers only: the benchmark's baseline).
 */
export function decoded(block: TronBlock, infos: TronTransactionInfo[] | null, activity: ActivityDecodeOptions | null): DecodedBlock {
  const h = block.block_header.raw_data;
  const txIds = (block.transactions ?? []).map((tx) => tx.txID);
  return {
    number: h.number,
    blockId: block.blockID,
    parentHash: h.parentHash,
    timestampMs: h.timestamp,
    transfers: decodeBlock(block, infos),
    activities: activity === null ? [] : decodeActivities(block, infos, activity),
    txIds,
  };
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
export async function fetchDecodedRange(
  client: TronClient,
  start: number,
  end: number,
  concurrency: number,
  activity: ActivityDecodeOptions | null,
): Promise<DecodedBlock[]> {
  const blocks = await client.getBlockRange(start, end);
  const fetched = await mapLimit(blocks, concurrency, async (b) => {
    try {
      return decoded(b, await infosFor(client, b), activity);
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
