// The history scanner's metrics, beside the live streams' (matcher/metrics.ts).
import { Counter } from "prom-client";
import { metrics } from "../../common/http-service.ts";

const registers = [metrics];

export const blocksScanned = new Counter({
  name: "matcher_backfill_blocks_total",
  help: "Blocks the history scanner read for backfill jobs (once per block however many jobs wanted it).",
  labelNames: ["chain"],
  registers,
});

export const historyRequests = new Counter({
  name: "matcher_backfill_node_requests_total",
  help: "Node requests made for backfill jobs, by endpoint.",
  labelNames: ["chain", "endpoint"],
  registers,
});
