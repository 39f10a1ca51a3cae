// `bun tools/receiver/main.ts`: the HTTPS receiver as its own process (benchmark, demo). It makes a test PKI unless
// RECEIVER_CERT/RECEIVER_KEY (PEM files) are given, prints one JSON line {port, caFile} on stdout, answers 200 to
// every POST, and prints the number of deliveries on SIGTERM.
import { readFileSync } from "node:fs";
import { createTestPki } from "./certs.ts";
import { startReceiver } from "./server.ts";

const given = process.env.RECEIVER_CERT && process.env.RECEIVER_KEY;
const pki = given ? undefined : createTestPki();
const cert = given ? readFileSync(process.env.RECEIVER_CERT!, "utf8") : pki!.cert;
const key = given ? readFileSync(process.env.RECEIVER_KEY!, "utf8") : pki!.key;
const receiver = await startReceiver({ cert, key, port: Number(process.env.RECEIVER_PORT ?? 0), record: false });
console.log(JSON.stringify({ port: receiver.port, caFile: pki?.caFile ?? null }));

process.on("SIGTERM", async () => {
  console.log(JSON.stringify({ deliveries: receiver.count() }));
  await receiver.close();
  process.exit(0);
});
