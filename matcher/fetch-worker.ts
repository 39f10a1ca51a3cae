// The worker thread behind workerRangeSource (fetch.ts): fetches a range of blocks and their transaction infos,
// decodes them, and posts the transfers back. Node request outcomes go back too, for the main thread's metrics.
import { fetchDecodedRange, type Observation, type WorkerReply, type WorkerRequest } from "./fetch.ts";
import { TronClient } from "./tron-client.ts";

declare const self: Worker;

const clients = new Map<string, TronClient>();
let observations: Observation[] = [];

self.onmessage = async (ev: MessageEvent<WorkerRequest>) => {
  const { id, start, end, client: opts, concurrency } = ev.data;
  const key = JSON.stringify(opts);
  let client = clients.get(key);
  if (!client) {
    client = new TronClient({ ...opts, observe: (endpoint, ok, seconds) => void observations.push([endpoint, ok, seconds]) });
    clients.set(key, client);
  }
  let reply: WorkerReply;
  try {
    const blocks = await fetchDecodedRange(client, start, end, concurrency);
    reply = { id, blocks, observations };
  } catch (err) {
    reply = { id, observations, error: String((err as Error)?.message ?? err) };
  }
  observations = [];
  self.postMessage(reply);
};
