// `bun tools/receiver/main.ts`: a receiver as its own process (benchmark, demo, README first steps): Bun.serve over
// TLS on 127.0.0.1 answering 200. It makes a test PKI unless RECEIVER_CERT/RECEIVER_KEY (PEM files) are given, and
// copies that PKI's CA to RECEIVER_CA_OUT when set (a fixed path to hand to the service's DELIVERY_CA_FILE); verifies
// signatures when RECEIVER_SECRETS (comma-separated whsec_ secrets) is set; prints one JSON line {port, caFile} on
// stdout, then with RECEIVER_LOG=1 one line per delivery, on SIGUSR1 {received} (what it has received so far: the
// matcher benchmark polls it), and on SIGTERM {deliveries, rejected, cpuMicrosPerDelivery}.
import { copyFileSync, readFileSync } from "node:fs";
import { createTestPki } from "./certs.ts";
import { startFastReceiver } from "./server.ts";

const given = process.env.RECEIVER_CERT && process.env.RECEIVER_KEY;
const pki = given ? undefined : createTestPki();
const cert = given ? readFileSync(process.env.RECEIVER_CERT!, "utf8") : pki!.cert;
const key = given ? readFileSync(process.env.RECEIVER_KEY!, "utf8") : pki!.key;
const secrets = (process.env.RECEIVER_SECRETS ?? "").split(",").filter(Boolean);
const caOut = process.env.RECEIVER_CA_OUT;
if (caOut && pki) copyFileSync(pki.caFile, caOut);
const receiver = startFastReceiver({
  cert,
  key,
  port: Number(process.env.RECEIVER_PORT ?? 0),
  secrets,
  onDelivery:
    process.env.RECEIVER_LOG === "1"
      ? ({ headers, body, verified }) => {
          let payload: unknown = body;
          try {
            payload = JSON.parse(body);
          } catch {
            // Not JSON: shown as the text it is.
          }
          console.log(JSON.stringify({ webhookId: headers["webhook-id"], subscriptionId: headers["x-subscription-id"], verified, payload }));
        }
      : undefined,
});
console.log(JSON.stringify({ port: receiver.port, caFile: caOut && pki ? caOut : (pki?.caFile ?? null) }));

process.on("SIGUSR1", () => console.log(JSON.stringify({ received: receiver.count() })));

process.on("SIGTERM", async () => {
  const cpu = process.cpuUsage();
  const n = receiver.count();
  console.log(JSON.stringify({ deliveries: n, rejected: receiver.rejected(), cpuMicrosPerDelivery: n ? Math.round((cpu.user + cpu.system) / n) : 0 }));
  await receiver.close();
  process.exit(0);
});
