// A delivery test bed: a fresh database and Redis DB, the real registry and the real deliverer (in-process unless a
// test runs the deliverer as its own process), the HTTPS receiver with a test CA trusted through DELIVERY_CA_FILE,
// and SSRF_ALLOW_CIDRS=127.0.0.1/32 so the receiver on localhost is reachable. Nothing is mocked.
import { fromRpcError } from "../../common/rpc-errors.ts";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { SQL, type Subprocess } from "bun";
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { loadConfig, type Config } from "../../common/config.ts";
import { inProcessTransport } from "../../common/rpc.ts";
import { staticResolver, type Resolver } from "../../common/ssrf.ts";
import { createDeliverer, type DelivererDeps, type DelivererHandle } from "../../deliverer/index.ts";
import { create } from "@bufbuild/protobuf";
import { DeliveryService, NewEventSchema, TransferSchema, type EventView, type Transfer } from "../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { ApiKeyService, SubscriptionService } from "../../gen/webhooks/registry/v1/registry_pb.ts";
import { createRegistry, type RegistryHandle } from "../../registry/index.ts";
import { createTestPki, type TestPki } from "../../tools/receiver/certs.ts";
import { startReceiver, type ReceivedDelivery, type Receiver } from "../../tools/receiver/server.ts";
import { createTestDatabase, type TestDatabase } from "./db.ts";
import { openTestRedis, type RedisKind } from "./redis-cluster.ts";
import type { StackRedis } from "./stack.ts";

export interface DeliveryBedOptions {
  env?: Record<string, string>;
  /** Resolver for the registry's request-time check; default answers localhost names only. */
  registryResolver?: Resolver;
  /** Resolver for the deliverer's per-attempt check. */
  delivererResolver?: Resolver;
  /** false: no in-process deliverer (the test runs one as a separate process). */
  deliverer?: boolean;
  delivererDeps?: Omit<DelivererDeps, "registry" | "resolver">;
  /** "server" (default): a leased DB of the shared test Redis; "cluster": a real 3-master Redis Cluster of its own. */
  redisKind?: RedisKind;
}

export interface DeliveryBed {
  config: Config;
  /** The environment a separate deliverer process needs to join this bed. */
  env: Record<string, string>;
  registry: RegistryHandle;
  registryTransport: Transport;
  deliverer: DelivererHandle | undefined;
  delivery: Client<typeof DeliveryService>;
  subscriptions: Client<typeof SubscriptionService>;
  keys: Client<typeof ApiKeyService>;
  pki: TestPki;
  receiver: Receiver;
  database: TestDatabase;
  /** A small direct connection to the bed's database, for assertions on what was stored. */
  sql: SQL;
  redis: StackRedis;
  /** A key plus an enabled subscription to `receiver.url(path)`; the receiver verifies with its secret. */
  subscribe(path: string, opts?: { chains?: string[]; status?: string; url?: string }): Promise<{ keyId: string; subscriptionId: string; secret: string }>;
  stop(): Promise<void>;
}

export async function startDeliveryBed(opts: DeliveryBedOptions = {}): Promise<DeliveryBed> {
  const database = await createTestDatabase("deliv", { migrated: true });
  const target = await openTestRedis(opts.redisKind ?? "server");
  const redis: StackRedis = { url: target.url, db: target.db, kind: target.kind, flush: target.flush, cluster: target.cluster, release: target.release };
  const pki = createTestPki();
  const receiver = await startReceiver({ cert: pki.cert, key: pki.key });
  const cleanups: (() => Promise<void> | void)[] = [() => database.drop(), () => redis.release(), () => receiver.close()];
  const stop = async () => {
    for (const fn of cleanups.splice(0).reverse()) {
      try {
        await fn();
      } catch {
        // keep tearing down
      }
    }
  };
  const sql = new SQL(database.url, { max: 2 });
  cleanups.push(() => sql.close());
  try {
    const env: Record<string, string> = {
      DATABASE_URL: database.url,
      REDIS_URL: redis.url,
      REDIS_PREFIX: "test:",
      APP_SECRET: randomBytes(32).toString("base64"),
      // Served RPC ports require it; a separate process joins with `env`, a network client sends config.internalToken.
      INTERNAL_TOKEN: randomBytes(32).toString("base64"),
      DELIVERY_CA_FILE: pki.caFile,
      SSRF_ALLOW_CIDRS: "127.0.0.1/32",
      RETRY_SCHEDULE: "0,50ms,100ms,100ms,100ms,100ms,100ms",
      DELIVERY_TIMEOUT_MS: "2000",
      LOG_LEVEL: "warn",
      // Small pools: the suite runs files in parallel on one PostgreSQL (docs/testing.md).
      DATABASE_POOL_MAX: "6",
      ...opts.env,
    };
    const config = loadConfig(env);
    const registry = await createRegistry(config, { resolver: opts.registryResolver ?? staticResolver({}) });
    cleanups.push(() => registry.close());
    const registryTransport = inProcessTransport(registry.routes);
    let deliverer: DelivererHandle | undefined;
    if (opts.deliverer !== false) {
      deliverer = await createDeliverer(config, {
        registry: registryTransport,
        resolver: opts.delivererResolver,
        ...opts.delivererDeps,
      });
      cleanups.push(() => deliverer!.close());
    }
    const subscriptions = createClient(SubscriptionService, registryTransport);
    const keys = createClient(ApiKeyService, registryTransport);
    return {
      config,
      env,
      registry,
      registryTransport,
      deliverer,
      delivery: createClient(DeliveryService, deliverer ? inProcessTransport(deliverer.routes) : registryTransport),
      subscriptions,
      keys,
      pki,
      receiver,
      database,
      sql,
      redis,
      async subscribe(path, sopts = {}) {
        const key = await keys.createApiKey({ name: "test", chains: sopts.chains ?? [] });
        const res = await subscriptions.createSubscription({
          keyId: key.key!.id,
          destination: { type: "https", url: sopts.url ?? receiver.url(path) },
          events: ["wallet.transfer.broadcasted", "service.ping"],
          status: sopts.status ?? "",
          description: "",
        });
        const sub = res.subscription!;
        receiver.setSecrets(path, [sub.destination!.secret]);
        return { keyId: key.key!.id, subscriptionId: sub.id, secret: sub.destination!.secret };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Enqueues `n` sample transfers (sampleTransfer(offset) onwards) for one subscription, 500 per Enqueue call as the
 * matcher batches; returns the events' ids and how many Enqueue reported as newly created.
 */
export async function enqueueTransfers(
  bed: DeliveryBed,
  subscriptionId: string,
  n: number,
  offset: number,
): Promise<{ ids: string[]; created: number }> {
  const ids: string[] = [];
  let created = 0;
  for (let i = 0; i < n; i += 500) {
    const events = Array.from({ length: Math.min(500, n - i) }, (_, j) =>
      create(NewEventSchema, { subscriptionId, kind: "wallet.transfer.broadcasted", transfer: sampleTransfer(offset + i + j) }),
    );
    const res = await bed.delivery.enqueue({ events });
    ids.push(...res.eventIds);
    created += res.created;
  }
  return { ids, created };
}

/** How many times each webhook-id arrived among `deliveries`, in the order each first arrived. */
export function sendsPerWebhookId(deliveries: ReceivedDelivery[]): number[] {
  const seen = new Map<string, number>();
  for (const d of deliveries) seen.set(d.headers["webhook-id"]!, (seen.get(d.headers["webhook-id"]!) ?? 0) + 1);
  return [...seen.values()];
}

/** Polls GetEvent until `predicate` holds (bounded wait), returning the view. */
export async function waitForEvent(
  bed: DeliveryBed,
  ref: { keyId: string; subscriptionId: string; eventId: string },
  predicate: (e: EventView) => boolean,
  timeoutMs = 20_000,
): Promise<EventView> {
  const deadline = Date.now() + timeoutMs;
  let last: EventView | undefined;
  while (Date.now() < deadline) {
    last = (await bed.delivery.getEvent(ref)).event;
    if (last && predicate(last)) return last;
    await Bun.sleep(25);
  }
  throw new Error(`event ${ref.eventId} did not reach the expected state within ${timeoutMs} ms; last: ${JSON.stringify(last, (_, v) => (typeof v === "bigint" ? String(v) : v))}`);
}

/** A transfer for Enqueue (the shape the matcher sends). */
export function sampleTransfer(n: number, chainId = "tron:nile"): Transfer {
  return create(TransferSchema, {
    chainId,
    blockNumber: BigInt(1000 + n),
    blockHash: n.toString(16).padStart(64, "0"),
    blockTimestampMs: BigInt(Date.now()),
    txId: (n + 0xabc000).toString(16).padStart(64, "0"),
    logIndex: -1,
    internalIndex: -1,
    fee: "0",
    from: "TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8",
    to: "TNUC9Qb1rRpS5CbWLmNMxXBjyFoydXjWFR",
    amount: String(1_000_000 + n),
    asset: { type: "native", standard: "TRX", symbol: "TRX", decimals: 6 },
    matchedAddresses: [{ chainId, address: "TNUC9Qb1rRpS5CbWLmNMxXBjyFoydXjWFR", role: "to" }],
  });
}

/** The public error code an RPC call ends with ("ok" when it succeeds). */
export async function rpcOutcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return fromRpcError(err).code;
  }
  return "ok";
}

const ROOT = join(import.meta.dir, "..", "..");
const BUN = join(ROOT, "node_modules", ".bin", "bun");

/**
 * A deliverer in its own process (`bun deliverer/main.ts`) on the bed's database and Redis, reaching the registry at
 * `registryUrl`, with its ports picked by the system: for tests that kill a worker. The caller kills it.
 */
export function spawnDelivererProcess(bed: DeliveryBed, registryUrl: string): Subprocess {
  return Bun.spawn([BUN, join(ROOT, "deliverer", "main.ts")], {
    cwd: ROOT,
    env: { ...process.env, ...bed.env, REGISTRY_URL: registryUrl, DELIVERER_PORT: "0", DELIVERER_GRPC_PORT: "0" },
    stdout: "ignore",
    stderr: "ignore",
  });
}
