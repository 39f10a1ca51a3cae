// The whole stack for integration tests, in-process: a fresh PostgreSQL database and Redis DB, the registry
// (served on free ports, gRPC included) and the gateway in front of it. Tests talk HTTP to `baseUrl`.
// Deliverer and matcher helpers extend this file rather than writing their own.
import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { loadConfig, type Config } from "../../common/config.ts";
import { inProcessTransport } from "../../common/rpc.ts";
import { serveService, type ServedService } from "../../common/service.ts";
import { staticResolver, type Resolver } from "../../common/ssrf.ts";
import { createDeliverer, type DelivererDeps, type DelivererHandle } from "../../deliverer/index.ts";
import { createMatcher, type MatcherDeps, type MatcherHandle } from "../../matcher/index.ts";
import { createGatewayApp, type GatewayApp } from "../../gateway/app.ts";
import type { RefusalPacerOptions } from "../../gateway/refusal-pace.ts";
import { ApiKeyService } from "../../gen/webhooks/registry/v1/registry_pb.ts";
import { createRegistry, type RegistryHandle } from "../../registry/index.ts";
import { createTestDatabase, type TestDatabase } from "./db.ts";
import { openTestRedis, type RedisKind, type TestRedisCluster } from "./redis-cluster.ts";

/** Public-looking names the default test resolver answers (no real DNS in tests). */
export const TEST_HOSTS: Record<string, string[]> = {
  "hooks.example.com": ["93.184.216.34"],
  "receiver.example.org": ["93.184.216.35", "2606:2800:220:1:248:1893:25c8:1946"],
};
export const TEST_DESTINATION = "https://hooks.example.com/webhooks";

export interface StackOptions {
  /** Environment overrides, applied over the stack's own (database, Redis DB, free ports, a high rate limit). */
  env?: Record<string, string>;
  /** DNS for the request-time SSRF check; default: a static table of TEST_HOSTS. */
  resolver?: Resolver;
  /** Reach PostgreSQL through this local port (a test's TCP proxy) instead of 5432; the database is created directly. */
  databasePort?: number;
  /** The gateway's API-key cache lifetime (ms). */
  authCacheMs?: number;
  /** The gateway's bounds on refusals held until their Retry-After (gateway/refusal-pace.ts). */
  refusalsHeld?: RefusalPacerOptions;
  /** How long the gateway's rate limiter waits for Redis before failing open (default 250 ms). */
  rateLimitTimeoutMs?: number;
  /** Start the deliverer too (in-process, served on free ports) and mount it behind the gateway. */
  deliverer?: boolean | Omit<DelivererDeps, "registry">;
  /** Start the matcher too (needs `deliverer`), reading the given TRON nodes (tools/tron-sim); chains from MATCHER_CHAINS. */
  matcher?: Omit<MatcherDeps, "deliverer">;
  /** "server" (default): a leased DB of the shared test Redis; "cluster": a real 3-master Redis Cluster of its own. */
  redisKind?: RedisKind;
  /** TRON nodes the registry resolves backfill ranges against (default: the matcher's, when given). */
  nodeUrls?: MatcherDeps["nodeUrls"];
}

/** The stack's Redis: REDIS_URL, and how to empty it (every master of a cluster) or restart one of its nodes. */
export interface StackRedis {
  url: string;
  db: number;
  kind: RedisKind;
  flush(): Promise<void>;
  /** Present for a cluster. */
  cluster: TestRedisCluster | undefined;
  release(): Promise<void>;
}

export interface TestKey {
  id: string;
  key: string;
}

export interface Stack {
  baseUrl: string;
  config: Config;
  registry: RegistryHandle;
  gateway: GatewayApp;
  /** Present when started with `deliverer`. */
  deliverer: DelivererHandle | undefined;
  /** Present when started with `matcher`. */
  matcher: MatcherHandle | undefined;
  database: TestDatabase;
  redis: StackRedis;
  /** Issues an API key through the registry's ApiKeyService (chains default to all three). */
  createKey(opts?: { chains?: string[]; name?: string }): Promise<TestKey>;
  stop(): Promise<void>;
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const database = await createTestDatabase("stack", { migrated: true });
  const target = await openTestRedis(opts.redisKind ?? "server");
  // The services open their own clients from REDIS_URL; the target's client only flushes.
  const redis: StackRedis = { url: target.url, db: target.db, kind: target.kind, flush: target.flush, cluster: target.cluster, release: target.release };
  const cleanups: (() => Promise<void> | void)[] = [() => database.drop(), () => redis.release()];
  const stop = async () => {
    for (const fn of cleanups.splice(0).reverse()) {
      try {
        await fn();
      } catch {
        // Keep tearing down: one failed close must not leak the rest.
      }
    }
  };
  try {
    const databaseUrl = new URL(database.url);
    if (opts.databasePort !== undefined) databaseUrl.port = String(opts.databasePort);
    const config = loadConfig({
      DATABASE_URL: databaseUrl.toString(),
      REDIS_URL: redis.url,
      REDIS_PREFIX: "test:",
      APP_SECRET: randomBytes(32).toString("base64"),
      // The root every caller's token derives from (callerToken(config, "gateway"), …); the served RPC ports also take
      // it as is, as the legacy all-methods caller, since no per-caller token is configured here.
      INTERNAL_TOKEN: randomBytes(32).toString("base64"),
      PORT: "0",
      REGISTRY_PORT: "0",
      REGISTRY_GRPC_PORT: "0",
      RATE_LIMIT_RPS: "100000",
      RATE_LIMIT_BURST: "100000",
      UNKNOWN_KEY_RATE_LIMIT_RPS: "100000",
      UNKNOWN_KEY_RATE_LIMIT_BURST: "100000",
      LOG_LEVEL: "warn",
      // Small pools: the suite runs files in parallel on one PostgreSQL (docs/testing.md).
      DATABASE_POOL_MAX: "6",
      ...opts.env,
    });

    const nodeUrls = opts.nodeUrls ?? opts.matcher?.nodeUrls;
    const registry = await createRegistry(config, { resolver: opts.resolver ?? staticResolver(TEST_HOSTS), ...(nodeUrls ? { nodeUrls } : {}) });
    cleanups.push(() => registry.close());
    const served: ServedService = await serveService(registry, config.registryPort, config.registryGrpcPort);
    cleanups.push(() => served.stop());
    config.registryPort = served.http.port ?? 0;
    config.registryGrpcPort = (served.grpc?.address() as { port: number } | null)?.port ?? 0;
    config.registryUrl = `http://127.0.0.1:${config.registryPort}`;

    // Each service calls as itself, as under `npm start`; the test's own calls (createKey) go as the operator.
    const registryTransport = inProcessTransport(registry.routes, "deliverer");
    let deliverer: DelivererHandle | undefined;
    if (opts.deliverer) {
      const delivererDeps = opts.deliverer === true ? {} : opts.deliverer;
      deliverer = await createDeliverer(config, { ...delivererDeps, registry: registryTransport });
      cleanups.push(() => deliverer!.close());
      const servedDeliverer = await serveService(deliverer, 0, 0);
      cleanups.push(() => servedDeliverer.stop());
      config.delivererPort = servedDeliverer.http.port ?? 0;
      config.delivererUrl = `http://127.0.0.1:${config.delivererPort}`;
    }
    let matcher: MatcherHandle | undefined;
    if (opts.matcher) {
      if (!deliverer) throw new Error("startStack: `matcher` needs `deliverer`");
      matcher = await createMatcher(config, { ...opts.matcher, deliverer: inProcessTransport(deliverer.routes, "matcher") });
      cleanups.push(() => matcher!.close());
      const servedMatcher = await serveService(matcher, 0);
      cleanups.push(() => servedMatcher.stop());
      config.matcherPort = servedMatcher.http.port ?? 0;
    }
    const gateway = createGatewayApp({
      config,
      registry: inProcessTransport(registry.routes, "gateway"),
      deliverer: deliverer ? inProcessTransport(deliverer.routes, "gateway") : undefined,
      authCacheMs: opts.authCacheMs,
      refusalsHeld: opts.refusalsHeld,
      rateLimitTimeoutMs: opts.rateLimitTimeoutMs,
    });
    gateway.listen({ port: 0, hostname: "127.0.0.1" });
    cleanups.push(async () => {
      await gateway.stop(true);
    });
    config.port = gateway.server?.port ?? 0;

    const keys = createClient(ApiKeyService, inProcessTransport(registry.routes, "operator"));
    return {
      baseUrl: `http://127.0.0.1:${config.port}`,
      config,
      registry,
      gateway,
      deliverer,
      matcher,
      database,
      redis,
      async createKey(keyOpts = {}) {
        const res = await keys.createApiKey({ name: keyOpts.name ?? "test", chains: keyOpts.chains ?? [] });
        if (!res.key) throw new Error("CreateApiKey answered without a key");
        return { id: res.key.id, key: res.secret };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
