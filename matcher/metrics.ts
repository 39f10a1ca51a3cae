// The matcher's Prometheus metrics, registered once per process on the shared registry (several matchers in one
// test process share them, labelled by chain).
import { Counter, Gauge, Histogram } from "prom-client";
import { metrics } from "../common/http-service.ts";

const registers = [metrics];

export const headBlock = new Gauge({
  name: "matcher_head_block",
  help: "Newest block number the TRON node reported (the head stream).",
  labelNames: ["chain"],
  registers,
});

export const checkpointBlock = new Gauge({
  name: "matcher_checkpoint_block",
  help: "Last block whose broadcasted events the deliverer accepted (the head stream).",
  labelNames: ["chain"],
  registers,
});

export const lagBlocks = new Gauge({
  name: "matcher_lag_blocks",
  help: "Blocks between the node's head and the checkpoint.",
  labelNames: ["chain"],
  registers,
});

export const lagSeconds = new Gauge({
  name: "matcher_lag_seconds",
  help: "Age of the checkpoint block's timestamp when it was checkpointed.",
  labelNames: ["chain"],
  registers,
});

export const nodeUp = new Gauge({
  name: "matcher_node_up",
  help: "1 when the last request to the chain's TRON node succeeded, else 0.",
  labelNames: ["chain"],
  registers,
});

export const nodeRequests = new Counter({
  name: "matcher_node_requests_total",
  help: "Requests to the TRON node by endpoint and outcome.",
  labelNames: ["chain", "endpoint", "outcome"],
  registers,
});

export const nodeLatency = new Histogram({
  name: "matcher_node_request_seconds",
  help: "TRON node request latency.",
  labelNames: ["chain", "endpoint"],
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers,
});

export const blocksProcessed = new Counter({
  name: "matcher_blocks_total",
  help: "Blocks matched and checkpointed.",
  labelNames: ["chain"],
  registers,
});

export const transfersDecoded = new Counter({
  name: "matcher_transfers_total",
  help: "Successful transfers decoded from blocks.",
  labelNames: ["chain"],
  registers,
});

export const activitiesDecoded = new Counter({
  name: "matcher_activities_total",
  help: "Account activities (approvals, permissions, resources, blacklist events) decoded from blocks by the head stream.",
  labelNames: ["chain"],
  registers,
});

export const eventsEnqueued = new Counter({
  name: "matcher_events_total",
  help: "Events handed to the deliverer (duplicates included).",
  labelNames: ["chain"],
  registers,
});

export const forks = new Counter({
  name: "matcher_forks_total",
  help: "Forks detected (parent hash mismatch) and rolled back.",
  labelNames: ["chain"],
  registers,
});

export const solidifiedForks = new Counter({
  name: "matcher_solidified_forks_total",
  help: "Solidified checkpoints found on a block a fork replaced (finality counted too short) and rolled back.",
  labelNames: ["chain"],
  registers,
});

export const leaseHeld = new Gauge({
  name: "matcher_lease_held",
  help: "1 while this replica streams the chain, 0 while it waits for the lease.",
  labelNames: ["chain"],
  registers,
});

export const streamErrors = new Counter({
  name: "matcher_stream_errors_total",
  help: "Stream steps that failed and were retried (node, watch index, deliverer or database trouble).",
  labelNames: ["chain"],
  registers,
});

export const stageSeconds = new Counter({
  name: "matcher_stage_seconds_total",
  help: "Wall time per stage: fetch (catch-up ranges with their transaction infos, decoded), decode (tip blocks), lookup, enqueue, checkpoint.",
  labelNames: ["chain", "stage"],
  registers,
});

export const solidifiedHeadBlock = new Gauge({
  name: "matcher_solidified_head_block",
  help: "The solidified head the solidified stream follows (the node's, or the head minus MATCHER_CONFIRMATIONS).",
  labelNames: ["chain"],
  registers,
});

export const solidifiedCheckpointBlock = new Gauge({
  name: "matcher_solidified_checkpoint_block",
  help: "Last solidified block whose confirmed / failed events the deliverer accepted.",
  labelNames: ["chain"],
  registers,
});

export const solidifiedLagBlocks = new Gauge({
  name: "matcher_solidified_lag_blocks",
  help: "Blocks between the solidified head and the solidified stream's checkpoint.",
  labelNames: ["chain"],
  registers,
});

export const solidifiedLagSeconds = new Gauge({
  name: "matcher_solidified_lag_seconds",
  help: "Age of the solidified checkpoint block's timestamp when it was checkpointed.",
  labelNames: ["chain"],
  registers,
});

export const solidityApiUp = new Gauge({
  name: "matcher_solidity_api",
  help: "1 while the node answers /walletsolidity/getnowblock, 0 while finality is counted as head minus confirmations.",
  labelNames: ["chain"],
  registers,
});

export const solidifiedBlocksProcessed = new Counter({
  name: "matcher_solidified_blocks_total",
  help: "Solidified blocks matched and checkpointed by the solidified stream.",
  labelNames: ["chain"],
  registers,
});

export const finalEvents = new Counter({
  name: "matcher_final_events_total",
  help: "Confirmed and failed events handed to the deliverer (duplicates included), by kind and reason.",
  labelNames: ["chain", "kind"],
  registers,
});

export const pendingDrops = new Gauge({
  name: "matcher_pending_drops",
  help: "Transfers of fork-replaced blocks waiting for the solidified chain (included → kept, expired → dropped).",
  labelNames: ["chain"],
  registers,
});

export const blockCache = new Counter({
  name: "matcher_block_cache_total",
  help: "Solidified-stream reads of the blocks the head stream fetched: hit (not fetched again) or miss.",
  labelNames: ["chain", "outcome"],
  registers,
});

export const rematchedBlocks = new Counter({
  name: "matcher_rematched_blocks_total",
  help: "Blocks matched again after the registry repaired the watch index (matcher/rematch.ts), by stream (head, solidified).",
  labelNames: ["chain", "stream"],
  registers,
});
