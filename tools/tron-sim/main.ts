// `bun tools/tron-sim/main.ts [--port 8090] [--block-ms 3000] [--tx 300] [--pool 2000] [--seed 1] [--backlog 0]
//   [--no-recorded] [--start 70000000] [--prerender] [--mix mainnet|transfers] [--usdt 0.43]
//   [--solid-lag 19] [--no-solidity] [--history-to ADDR,... [--history-every 10]] [--backlog-on-demand [--backlog-cache 256]]`: a java-tron HTTP API simulator on its own (see README.md).
import { parseArgs } from "node:util";
import { MIXES, mixWithUsdt } from "./generate.ts";
import { startTronSim } from "./server.ts";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "8090" },
    "block-ms": { type: "string", default: "3000" },
    tx: { type: "string", default: "300" },
    pool: { type: "string", default: "2000" },
    seed: { type: "string", default: "1" },
    backlog: { type: "string", default: "0" },
    "no-recorded": { type: "boolean", default: false },
    prerender: { type: "boolean", default: false },
    mix: { type: "string", default: "mainnet" },
    usdt: { type: "string" },
    start: { type: "string" },
    hostname: { type: "string", default: "127.0.0.1" },
    "solid-lag": { type: "string", default: "19" },
    "no-solidity": { type: "boolean", default: false },
    "history-to": { type: "string" },
    "history-every": { type: "string", default: "10" },
    "backlog-on-demand": { type: "boolean", default: false },
    "backlog-cache": { type: "string" },
  },
});

const baseMix = MIXES[values.mix as keyof typeof MIXES];
if (!baseMix) {
  process.stderr.write(`--mix must be one of ${Object.keys(MIXES).join(", ")}\n`);
  process.exit(2);
}
const sim = startTronSim({
  port: Number(values.port),
  hostname: values.hostname,
  blockMs: Number(values["block-ms"]),
  txPerBlock: Number(values.tx),
  poolSize: Number(values.pool),
  seed: Number(values.seed),
  backlog: Number(values.backlog),
  recorded: !values["no-recorded"],
  prerender: values.prerender,
  solidLag: Number(values["solid-lag"]),
  mix: values.usdt ? mixWithUsdt(baseMix, Number(values.usdt)) : baseMix,
  ...(values.start ? { startNumber: Number(values.start) } : {}),
  backlogOnDemand: values["backlog-on-demand"],
  ...(values["backlog-cache"] ? { backlogCache: Number(values["backlog-cache"]) } : {}),
  ...(values["history-to"] ? { history: { to: values["history-to"].split(","), every: Number(values["history-every"]) } } : {}),
});
if (values["no-solidity"]) sim.chain.solidityApi = false;
const head = sim.chain.head().block.block_header.raw_data.number;
process.stdout.write(`${JSON.stringify({ msg: "tron-sim listening", url: sim.url, head })}\n`);
// Nothing to flush: stop at once (waiting for keep-alive clients to leave could take long).
for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => process.exit(0));
