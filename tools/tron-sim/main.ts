// `bun tools/tron-sim/main.ts [--port 8090] [--block-ms 3000] [--tx 300] [--pool 2000] [--seed 1] [--backlog 0]
//   [--no-recorded] [--start 70000000] [--prerender] [--usdt 0.45]
//   [--solid-lag 19] [--no-solidity] [--history-to ADDR,... [--history-every 10]]`: a java-tron HTTP API simulator on its own (see README.md).
import { parseArgs } from "node:util";
import { MAINNET_MIX, type TxMix } from "./generate.ts";
import { startTronSim } from "./server.ts";

/** The mainnet mix with the USDT share set to `usdt` (0..1), the rest scaled to fill the remainder. */
function mixWithUsdt(usdt: number): TxMix {
  const rest = MAINNET_MIX.trx + MAINNET_MIX.trc10 + MAINNET_MIX.other;
  const f = (1 - usdt) / rest;
  return { usdt, trx: MAINNET_MIX.trx * f, trc10: MAINNET_MIX.trc10 * f, other: MAINNET_MIX.other * f };
}

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
    usdt: { type: "string" },
    start: { type: "string" },
    hostname: { type: "string", default: "127.0.0.1" },
    "solid-lag": { type: "string", default: "19" },
    "no-solidity": { type: "boolean", default: false },
    "history-to": { type: "string" },
    "history-every": { type: "string", default: "10" },
  },
});

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
  ...(values.usdt ? { mix: mixWithUsdt(Number(values.usdt)) } : {}),
  ...(values.start ? { startNumber: Number(values.start) } : {}),
  ...(values["history-to"] ? { history: { to: values["history-to"].split(","), every: Number(values["history-every"]) } } : {}),
});
if (values["no-solidity"]) sim.chain.solidityApi = false;
const head = sim.chain.head().block.block_header.raw_data.number;
process.stdout.write(`${JSON.stringify({ msg: "tron-sim listening", url: sim.url, head })}\n`);
// Nothing to flush: stop at once (waiting for keep-alive clients to leave could take long).
for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => process.exit(0));
