// `bun run bench <name>` runs bench/<name>.ts's default export. The other files of bench/ are helpers the benches
// share (wrk, counters, CPU readings) or child processes they start (the stream consumer), not benches: naming one
// answers with the usage line, not with whatever importing it would do.
const BENCHES = ["api", "api-addresses", "api-flood", "backfill", "conditions", "delivery", "delivery-queues", "events", "fairness", "index", "matcher", "tron-address"];

const name = process.argv[2];
if (!name || !BENCHES.includes(name)) {
  console.error(`usage: bun run bench <name>   (one of: ${BENCHES.join(", ")})`);
  process.exit(2);
}
const mod = (await import(`./${name}.ts`)) as { default: () => unknown };
await mod.default();

export {};
