import type { ChainId } from "../common/contract/index.ts";

/** The block an event is made from: what every event of it carries. */
export interface BlockContext {
  chainId: ChainId;
  number: number;
  blockId: string;
  timestampMs: number;
}
