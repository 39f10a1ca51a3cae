// `bun tools/receiver/main.ts`: a receiver as its own process (benchmark, demo): Bun.serve over TLS answering 200.
// It makes a test PKI unless RECEIVER_CERT/RECEIVER_KEY (PEM files) are given, verifies signatures when
// RECEIVER_SECRETS (comma-separated whsec_ secrets) is set, prints one JSON line {port, caFile} on stdout, and on
// SIGTERM prints {deliveries, rejected, cpuMicrosPerDelivery}.
import { readFileSync } from "node:fs";
import { createTestPki } from "./certs.ts";
import { startFastReceiver } from "./server.ts";

const given = process.env.RECEIVER_CERT && process.env.RECEIVER_KEY;
const pki = given ? undefined : createTestPki();
const cert = given ? readFileSync(process.env.RECEIVER_CERT!, "utf8") : pki!.cert;
const key = given ? readFileSync(process.env.RECEIVER_KEY!, "utf8") : pki!.key;
const secrets = (process.env.RECEIVER_SECRETS ?? "").split(",").filter(Boolean);
const receiver = startFastReceiver({ cert, key, port: Number(process.env.RECEIVER_PORT ?? 0), secrets });
console.log(JSON.stringify({ port: receiver.port, caFile: pki?.caFile ?? null }));

process.on("SIGTERM", async () => {
  const cpu = process.cpuUsage();
  const n = receiver.count();
  console.log(JSON.stringify({ deliveries: n, rejected: receiver.rejected(), cpuMicrosPerDelivery: n ? Math.round((cpu.user + cpu.system) / n) : 0 }));
  await receiver.close();
  process.exit(0);
});
