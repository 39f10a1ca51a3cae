// The measuring client of `bench api-flood`, in a process of its own (as a customer's client is): GET `url` with a
// valid key one request at a time for `ms`; prints the sorted latencies (ms) and the statuses' counts as JSON.
const spec = JSON.parse(process.argv[2]!) as { url: string; key: string; ms: number };
const latencies: number[] = [];
const statuses: Record<string, number> = {};
const headers = { authorization: `Bearer ${spec.key}` };
const end = performance.now() + spec.ms;
while (performance.now() < end) {
  const t = performance.now();
  const res = await fetch(spec.url, { headers });
  await res.arrayBuffer();
  latencies.push(performance.now() - t);
  statuses[res.status] = (statuses[res.status] ?? 0) + 1;
}
console.log(JSON.stringify({ latencies: latencies.sort((a, b) => a - b), statuses }));
export {};
