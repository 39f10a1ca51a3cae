// tools/receiver/main.ts as the README's first steps run it: its test CA copied to RECEIVER_CA_OUT (what the service's
// DELIVERY_CA_FILE then trusts), one line per delivery with RECEIVER_LOG=1, signatures checked with RECEIVER_SECRETS.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { deliveryHeaders } from "../../../deliverer/sign.ts";
import { EXAMPLE_PAYLOADS, EXAMPLE_SECRET } from "../../../gateway/event-catalog.ts";

const ROOT = resolve(import.meta.dir, "../../..");
const dir = mkdtempSync(join(tmpdir(), "receiver-cli-"));
const caFile = join(dir, "ca.pem");
let proc: ReturnType<typeof Bun.spawn<"ignore", "pipe", "inherit">>;
let nextLine: () => Promise<string>;

beforeAll(() => {
  proc = Bun.spawn([process.execPath, join(ROOT, "tools/receiver/main.ts")], {
    cwd: ROOT,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "inherit",
    env: { ...process.env, RECEIVER_PORT: "0", RECEIVER_CA_OUT: caFile, RECEIVER_LOG: "1", RECEIVER_SECRETS: EXAMPLE_SECRET },
  });
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  nextLine = async () => {
    for (;;) {
      const end = buffered.indexOf("\n");
      if (end >= 0) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 1);
        return line;
      }
      const { value, done } = await reader.read();
      if (done) throw new Error(`the receiver's output ended: ${buffered}`);
      buffered += decoder.decode(value, { stream: true });
    }
  };
});
afterAll(() => {
  proc?.kill();
  rmSync(dir, { recursive: true, force: true });
});

test("writes its CA where asked, prints each delivery with whether its signature verified, and a summary on SIGTERM", async () => {
  const started = JSON.parse(await nextLine()) as { port: number; caFile: string };
  expect(started.caFile).toBe(caFile);
  expect(started.port).toBeGreaterThan(0);
  const ca = readFileSync(caFile, "utf8");
  expect(ca).toContain("BEGIN CERTIFICATE");

  const payload = EXAMPLE_PAYLOADS["wallet.transfer.broadcasted"];
  const body = JSON.stringify(payload);
  const send = (secret: string) =>
    fetch(`https://127.0.0.1:${started.port}/hooks`, {
      method: "POST",
      body,
      headers: deliveryHeaders({ eventId: payload.id, subscriptionId: payload.subscriptionId, secrets: [secret], body, at: new Date() }),
      // Trusts exactly the CA the receiver wrote out, as DELIVERY_CA_FILE makes the deliverer do.
      tls: { ca },
    });

  expect((await send(EXAMPLE_SECRET)).status).toBe(200);
  const good = JSON.parse(await nextLine()) as { webhookId: string; subscriptionId: string; verified: boolean; payload: unknown };
  expect(good).toEqual({ webhookId: payload.id, subscriptionId: payload.subscriptionId, verified: true, payload });

  expect((await send("whsec_" + Buffer.alloc(32, 7).toString("base64"))).status).toBe(200);
  expect((JSON.parse(await nextLine()) as { verified: boolean }).verified).toBe(false);

  proc.kill("SIGTERM");
  expect(JSON.parse(await nextLine())).toMatchObject({ deliveries: 2, rejected: 1 });
  expect(await proc.exited).toBe(0);
}, 30_000);
