// The flooding client of `bench api-flood`, in a process of its own so its work does not share the gateway's event
// loop: random key-shaped tokens at `url`, `concurrency` in flight, for `ms`; prints the statuses' counts as JSON.
import { randomBytes } from "node:crypto";

const spec = JSON.parse(process.argv[2]!) as { url: string; concurrency: number; ms: number };
const statuses: Record<string, number> = {};
const end = performance.now() + spec.ms;
await Promise.all(
  Array.from({ length: spec.concurrency }, async () => {
    while (performance.now() < end) {
      const res = await fetch(spec.url, { headers: { authorization: `Bearer whk_${randomBytes(32).toString("base64url")}` } });
      await res.arrayBuffer();
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    }
  }),
);
console.log(JSON.stringify(statuses));
