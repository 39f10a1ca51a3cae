// The StreamEvents consumer of bench/delivery-queues.ts, in its own process as a platform service's consumer is:
// `bun bench/stream-consumer.ts '{"url":…,"secret":…,"total":…}'` reads the key's stream from the start until it
// has `total` events, then prints one JSON line: {"got", "ms", "cpuUs"} (its own CPU, decoding included).
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { DeliveryService } from "../gen/webhooks/delivery/v1/delivery_pb.ts";

export interface ConsumerSpec {
  url: string;
  secret: string;
  total: number;
}

export interface ConsumerResult {
  got: number;
  ms: number;
  cpuUs: number;
}

const spec = JSON.parse(process.argv[2] ?? "{}") as ConsumerSpec;
const client = createClient(DeliveryService, createConnectTransport({ baseUrl: spec.url, useBinaryFormat: true }));
const abort = new AbortController();
let got = 0;
const t0 = performance.now();
const cpu0 = process.cpuUsage();
try {
  for await (const r of client.streamEvents({}, { headers: { authorization: `Bearer ${spec.secret}` }, signal: abort.signal })) {
    got += r.events.length;
    if (got >= spec.total) abort.abort();
  }
} catch (err) {
  if (!abort.signal.aborted) throw err;
}
const cpu = process.cpuUsage(cpu0);
const result: ConsumerResult = { got, ms: performance.now() - t0, cpuUs: cpu.user + cpu.system };
console.log(JSON.stringify(result));
