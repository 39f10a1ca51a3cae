// The matcher's test bed: the delivery bed (real registry, deliverer and verifying HTTPS receiver on a fresh
// database and Redis DB) plus one tools/tron-sim node per chain and the real matcher reading them. Nothing is
// mocked; the simulator is the TRON node.
import type { ChainId } from "../../common/contract/index.ts";
import { loadConfig } from "../../common/config.ts";
import { inProcessTransport } from "../../common/rpc.ts";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { EventView } from "../../gen/webhooks/delivery/v1/delivery_pb.ts";
import type { MatchConditionsSchema } from "../../gen/webhooks/registry/v1/registry_pb.ts";
import { createMatcher, type MatcherDeps, type MatcherHandle } from "../../matcher/index.ts";
import { startTronSim, type TronSim, type TronSimOptions } from "../../tools/tron-sim/server.ts";
import { startDeliveryBed, type DeliveryBed, type DeliveryBedOptions } from "./delivery.ts";
import { servePublicApi, type PublicApi } from "./public-api.ts";
import type { RedisKind } from "./redis-cluster.ts";

export type MatchConditionsInit = MessageInitShape<typeof MatchConditionsSchema>;

export interface MatcherBed {
  bed: DeliveryBed;
  sims: Partial<Record<ChainId, TronSim>>;
  matcher: MatcherHandle | undefined;
  /** The gateway and the generated client, when started with `publicApi` (the end-to-end tests). */
  api: PublicApi | undefined;
  /** Starts the in-process matcher (when the bed was made without one). */
  startMatcher(): Promise<MatcherHandle>;
  /** A key (with `chains`) and a subscription to the receiver's `path`; the receiver verifies with its secret. */
  subscribe(
    path: string,
    opts?: { chains?: string[]; status?: string; events?: string[]; match?: MatchConditionsInit },
  ): Promise<{ keyId: string; subscriptionId: string }>;
  watch(sub: { keyId: string; subscriptionId: string }, chainId: ChainId, addresses: string[]): Promise<void>;
  /** Every event of a subscription (all pages). */
  events(sub: { keyId: string; subscriptionId: string }): Promise<EventView[]>;
  stop(): Promise<void>;
}

export interface MatcherBedOptions {
  chains?: ChainId[];
  sim?: TronSimOptions;
  /** Start the in-process matcher now (default true). */
  matcher?: boolean;
  env?: Record<string, string>;
  /** "server" (default) or "cluster": a real 3-master Redis Cluster of the bed's own (test/support/redis-cluster.ts). */
  redisKind?: RedisKind;
  /** Stream tuning for the in-process matcher (e.g. a small batchSize, so runs end below the solidified head). */
  stream?: MatcherDeps["stream"];
  /** Passed to the deliverer (e.g. its worker's reconciliation timing). */
  delivererDeps?: DeliveryBedOptions["delivererDeps"];
  /** Serve the public API too (bed.api): subscribe, watch and read events as a customer does. */
  publicApi?: boolean;
}

export async function startMatcherBed(opts: MatcherBedOptions = {}): Promise<MatcherBed> {
  const chains = opts.chains ?? ["tron:mainnet"];
  const bed = await startDeliveryBed({
    env: { MATCHER_CHAINS: chains.join(","), MATCHER_POLL_MS: "50", ...opts.env },
    redisKind: opts.redisKind,
    delivererDeps: opts.delivererDeps,
  });
  const sims: Partial<Record<ChainId, TronSim>> = {};
  let matcher: MatcherHandle | undefined;
  let api: PublicApi | undefined;
  const stop = async () => {
    await api?.stop().catch(() => {});
    await matcher?.close().catch(() => {});
    for (const sim of Object.values(sims)) await sim.stop().catch(() => {});
    await bed.stop();
  };
  try {
    chains.forEach((chainId, i) => {
      sims[chainId] = startTronSim({
        blockMs: 0,
        txPerBlock: 20,
        poolSize: 200,
        seed: 11 + i,
        ...(chainId === "tron:mainnet" ? {} : { recorded: false, startNumber: 50_000_000 + i * 1_000_000 }),
        ...opts.sim,
      });
    });
    const startMatcher = async () => {
      const config = loadConfig(bed.env);
      matcher = await createMatcher(config, {
        deliverer: inProcessTransport(bed.deliverer!.routes),
        nodeUrls: Object.fromEntries(chains.map((c) => [c, sims[c]!.url])),
        stream: { leaseRetryMs: 100, ...opts.stream },
      });
      return matcher;
    };
    if (opts.publicApi) api = servePublicApi(bed);
    if (opts.matcher ?? true) await startMatcher();
    return {
      bed,
      sims,
      api,
      get matcher() {
        return matcher;
      },
      startMatcher,
      async subscribe(path, sopts = {}) {
        const key = await bed.keys.createApiKey({ name: "matcher-test", chains: sopts.chains ?? [] });
        const res = await bed.subscriptions.createSubscription({
          keyId: key.key!.id,
          destination: { type: "https", url: bed.receiver.url(path) },
          events: sopts.events ?? ["wallet.transfer.broadcasted"],
          status: sopts.status ?? "",
          description: "",
          match: sopts.match,
        });
        const sub = res.subscription!;
        bed.receiver.setSecrets(path, [sub.destination!.secret]);
        return { keyId: key.key!.id, subscriptionId: sub.id };
      },
      async watch(sub, chainId, addresses) {
        const res = await bed.subscriptions.patchAddresses({
          keyId: sub.keyId,
          id: sub.subscriptionId,
          add: addresses.map((address) => ({ chainId, address })),
        });
        if (res.skipped.length > 0) throw new Error(`addresses skipped: ${JSON.stringify(res.skipped)}`);
      },
      async events(sub) {
        const out: EventView[] = [];
        let pageToken = "";
        do {
          const page = await bed.delivery.listEvents({ keyId: sub.keyId, subscriptionId: sub.subscriptionId, limit: 200, status: "", pageToken });
          out.push(...page.items);
          pageToken = page.nextPageToken;
        } while (pageToken);
        return out;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Queues transfers on a simulator, produces the block holding them and returns its number, id and the tx ids. */
export async function blockWith(sim: TronSim, transfers: Parameters<TronSim["chain"]["enqueue"]>[0]) {
  const txIds = sim.chain.enqueue(transfers);
  const [stored] = sim.produce(1);
  return { number: stored!.block.block_header.raw_data.number, blockId: stored!.block.blockID, timestamp: stored!.block.block_header.raw_data.timestamp, txIds };
}
