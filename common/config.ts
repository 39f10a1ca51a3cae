// One reader of the environment for every service: docs/CONTRACT.md "Running it" lists each variable and its default.
import { TRON_CHAINS, isChainId, type ChainId } from "./contract/index.ts";
import { loadBackfillConfig, type BackfillConfig } from "./backfill-config.ts";
import { DEFAULT_BLACKLIST_CONTRACTS, parseBlacklistContracts } from "./blacklist-config.ts";
import { INTERNAL_CALLERS, tokenVariable, type InternalCaller } from "./internal-callers.ts";
import { parseKeyring } from "./keyring.ts";
import { quotaDefaults, type QuotaLimits } from "./quotas.ts";
import { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule } from "./retry-policy.ts";

/** Parses "tron:mainnet,tron:nile" (the form of `keys create --chains` and MATCHER_CHAINS). */
function parseChainList(text: string): ChainId[] {
  const out: ChainId[] = [];
  for (const part of text.split(",").map((s) => s.trim()).filter(Boolean)) {
    if (!isChainId(part)) throw new Error(`unknown chain "${part}" (expected one of ${TRON_CHAINS.join(", ")})`);
    if (!out.includes(part)) out.push(part);
  }
  return out;
}

/** The shortest INTERNAL_TOKEN accepted: a bearer credential guessable in fewer bytes is no credential. */
const MIN_INTERNAL_TOKEN_BYTES = 32;

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`${name} must be a number, got "${raw}"`);
  return n;
}

function str(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  return raw === undefined || raw === "" ? fallback : raw;
}

/** WATCH_INDEX_SHARDS' default: a chain's watch index spreads over this many hash tags, hence up to this many nodes. */
export const DEFAULT_WATCH_INDEX_SHARDS = 16;

function shardCount(n: number): number {
  if (!Number.isInteger(n) || n < 1 || n > 1_024) throw new Error(`WATCH_INDEX_SHARDS must be an integer from 1 to 1024, got ${n}`);
  return n;
}

export interface Config {
  databaseUrl: string;
  /**
   * DATABASE_POOL_MAX: the most connections any one pool of the registry or the deliverer opens (each pool has its
   * own size below it: poolSize in common/db.ts; the matcher's is what its streams need). Unset, every pool keeps its
   * own; a small value fits many services on one server.
   */
  databasePoolMax: number | undefined;
  redisUrl: string;
  /** Prefix of every Redis key (Cluster hash tags are added per key where needed). */
  redisPrefix: string;
  /**
   * WATCH_INDEX_SHARDS: how many hash tags (Cluster slots) one chain's watch index spreads over (common/watch-index/layout.ts).
   * Every service must use the same value; a change is a new index, rebuilt by the registry from PostgreSQL.
   */
  watchIndexShards: number;
  /**
   * WATCH_OUTBOX_RETENTION_MS: how long applied watch-index outbox rows are kept, so a Redis that lost recent writes
   * (failover to a lagging replica) is replayed to rather than rebuilt (registry/watch-index/applier.ts replay).
   */
  watchOutboxRetentionMs: number;
  /**
   * WATCH_INDEX_VERIFY_MS: how often the registry checks each shard of the watch index against the counts its writers
   * keep, and repairs (rebuilds) a chain whose index lost keys outside them (registry/watch-index/upkeep.ts verify).
   */
  watchIndexVerifyMs: number;
  port: number;
  registryPort: number;
  registryGrpcPort: number;
  delivererPort: number;
  delivererGrpcPort: number;
  matcherPort: number;
  registryUrl: string;
  delivererUrl: string;
  /** The address every listener binds (BIND_HOST): loopback unless a container or pod asks for 0.0.0.0. */
  bindHost: string;
  /**
   * The bearer credential of every internal RPC (INTERNAL_TOKEN, >= 32 bytes). Undefined means "generate once and
   * keep it in the database" under `npm start`; a service run alone refuses to start without it.
   */
  internalToken: string | undefined;
  /**
   * Each internal caller's own token (INTERNAL_TOKEN_GATEWAY, _MATCHER, _DELIVERER, _OPERATOR; >= 32 bytes): a service
   * presents its own, a server recognises each one given (common/internal-auth.ts). Set, they override INTERNAL_TOKEN.
   */
  internalTokens: Partial<Record<InternalCaller, string>>;
  /** INTERNAL_TOKEN_<CALLER>_SHA256 (64 hex): a server recognises the caller without holding its token. */
  internalTokenDigests: Partial<Record<InternalCaller, string>>;
  /**
   * Whether `npm start` serves each internal service's RPC ports (INTERNAL_RPC=1, or one of the service's port
   * variables set). Services run alone always serve theirs.
   */
  internalRpc: { registry: boolean; deliverer: boolean };
  /**
   * mTLS on the gRPC ports (GRPC_TLS_CERT_FILE, GRPC_TLS_KEY_FILE, GRPC_TLS_CLIENT_CA_FILE, all three or none): the
   * port then speaks TLS only, requires a client certificate signed by the CA, and such a client needs no token.
   */
  grpcTls: { certFile: string; keyFile: string; clientCaFile: string } | undefined;
  /**
   * HTTPS on the services' Connect/health ports (INTERNAL_TLS_CERT_FILE and INTERNAL_TLS_KEY_FILE, both or none):
   * the internal hops then run over TLS (REGISTRY_URL / DELIVERER_URL with https://).
   */
  internalTls: { certFile: string; keyFile: string } | undefined;
  /** INTERNAL_TLS_CA_FILE: the CA (PEM) an https:// REGISTRY_URL / DELIVERER_URL is verified against, beside the system's. */
  internalTlsCaFile: string | undefined;
  /**
   * APP_SECRET, a keyring (common/keyring.ts): "KEY_ID:BASE64,..." newest first, each key >= 32 bytes; a bare base64
   * value is the key "k0". Undefined means "generate one key once and keep it in the database".
   */
  appSecret: string | undefined;
  tronNodeUrls: Record<ChainId, string>;
  trongridApiKey: string | undefined;
  retrySchedule: number[];
  ssrfAllowCidrs: string[];
  deliveryCaFile: string | undefined;
  deliveryTimeoutMs: number;
  rateLimitRps: number;
  rateLimitBurst: number;
  /**
   * UNKNOWN_KEY_RATE_LIMIT_RPS / _BURST: registry lookups of API keys the gateway does not know valid, per client
   * address and gateway process; beyond, 429 without a lookup.
   */
  unknownKeyRateLimitRps: number;
  unknownKeyRateLimitBurst: number;
  matcherPollMs: number | undefined;
  /** MATCHER_CONFIRMATIONS: finality = head − this many blocks, instead of the node's solidified head. */
  matcherConfirmations: number | undefined;
  maxAddressesPerSubscription: number;
  /** The operator's default quotas per API key (QUOTA_*; common/quotas.ts); a key's overrides win. */
  quotas: QuotaLimits;
  /** EVENT_RETENTION_DAYS: events (and their attempts) older than this many days go, a whole day at a time. */
  eventRetentionDays: number;
  matcherChains: ChainId[];
  /** BLACKLIST_CONTRACTS: per chain, the contracts (base58) whose blacklist events count (common/blacklist-config.ts). */
  blacklistContracts: Record<ChainId, ReadonlySet<string>>;
  /** BACKFILL_MAX_BLOCKS, BACKFILL_CONCURRENCY_PER_KEY, BACKFILL_NODE_CONCURRENCY (common/backfill-config.ts). */
  backfill: BackfillConfig;
  logLevel: string;
}

/** The variable naming each chain's java-tron node (log lines name it when the node cannot be reached). */
export const NODE_URL_VARIABLES: Record<ChainId, string> = {
  "tron:mainnet": "TRON_MAINNET_NODE_URL",
  "tron:nile": "TRON_NILE_NODE_URL",
  "tron:shasta": "TRON_SHASTA_NODE_URL",
};

export function loadConfig(env: Env = process.env): Config {
  const appSecret = env.APP_SECRET || undefined;
  // Refused at start, not at the first secret sealed.
  if (appSecret !== undefined) parseKeyring(appSecret);
  const internalToken = env.INTERNAL_TOKEN || undefined;
  if (internalToken !== undefined && Buffer.byteLength(internalToken) < MIN_INTERNAL_TOKEN_BYTES) {
    throw new Error(`INTERNAL_TOKEN must be at least ${MIN_INTERNAL_TOKEN_BYTES} bytes (e.g. openssl rand -base64 32)`);
  }
  const internalTokens: Partial<Record<InternalCaller, string>> = {};
  const internalTokenDigests: Partial<Record<InternalCaller, string>> = {};
  for (const caller of INTERNAL_CALLERS) {
    const name = tokenVariable(caller);
    const token = env[name] || undefined;
    if (token !== undefined) {
      if (Buffer.byteLength(token) < MIN_INTERNAL_TOKEN_BYTES) {
        throw new Error(`${name} must be at least ${MIN_INTERNAL_TOKEN_BYTES} bytes (e.g. openssl rand -base64 32)`);
      }
      internalTokens[caller] = token;
    }
    const digest = env[`${name}_SHA256`] || undefined;
    if (digest !== undefined) {
      if (!/^[0-9a-fA-F]{64}$/.test(digest)) throw new Error(`${name}_SHA256 must be the 64 hex digits of the token's SHA-256`);
      internalTokenDigests[caller] = digest.toLowerCase();
    }
  }
  const tlsFiles = [env.GRPC_TLS_CERT_FILE, env.GRPC_TLS_KEY_FILE, env.GRPC_TLS_CLIENT_CA_FILE].filter(Boolean);
  if (tlsFiles.length !== 0 && tlsFiles.length !== 3) {
    throw new Error("GRPC_TLS_CERT_FILE, GRPC_TLS_KEY_FILE and GRPC_TLS_CLIENT_CA_FILE go together: set all three or none");
  }
  const httpsFiles = [env.INTERNAL_TLS_CERT_FILE, env.INTERNAL_TLS_KEY_FILE].filter(Boolean);
  if (httpsFiles.length === 1) throw new Error("INTERNAL_TLS_CERT_FILE and INTERNAL_TLS_KEY_FILE go together: set both or neither");
  const eventRetentionDays = int(env, "EVENT_RETENTION_DAYS", 30);
  if (!Number.isInteger(eventRetentionDays) || eventRetentionDays < 1) {
    throw new Error(`EVENT_RETENTION_DAYS must be a whole number of days, at least 1, got "${env.EVENT_RETENTION_DAYS}"`);
  }
  const databasePoolMax = env.DATABASE_POOL_MAX ? int(env, "DATABASE_POOL_MAX", 0) : undefined;
  if (databasePoolMax !== undefined && (!Number.isInteger(databasePoolMax) || databasePoolMax < 1)) {
    throw new Error(`DATABASE_POOL_MAX must be a whole number of connections, at least 1, got "${env.DATABASE_POOL_MAX}"`);
  }
  const allRpc = env.INTERNAL_RPC === "1" || env.INTERNAL_RPC === "true";
  const isSet = (name: string) => env[name] !== undefined && env[name] !== "";
  return {
    databaseUrl: str(env, "DATABASE_URL", "postgres://postgres@127.0.0.1:5432/webhooks"),
    databasePoolMax,
    redisUrl: str(env, "REDIS_URL", "redis://127.0.0.1:6379"),
    redisPrefix: str(env, "REDIS_PREFIX", "whk:"),
    watchIndexShards: shardCount(int(env, "WATCH_INDEX_SHARDS", DEFAULT_WATCH_INDEX_SHARDS)),
    watchOutboxRetentionMs: int(env, "WATCH_OUTBOX_RETENTION_MS", 3_600_000),
    watchIndexVerifyMs: int(env, "WATCH_INDEX_VERIFY_MS", 60_000),
    port: int(env, "PORT", 3000),
    registryPort: int(env, "REGISTRY_PORT", 3001),
    registryGrpcPort: int(env, "REGISTRY_GRPC_PORT", 50051),
    delivererPort: int(env, "DELIVERER_PORT", 3002),
    delivererGrpcPort: int(env, "DELIVERER_GRPC_PORT", 50052),
    matcherPort: int(env, "MATCHER_PORT", 3003),
    registryUrl: str(env, "REGISTRY_URL", "http://127.0.0.1:3001"),
    delivererUrl: str(env, "DELIVERER_URL", "http://127.0.0.1:3002"),
    bindHost: str(env, "BIND_HOST", "127.0.0.1"),
    internalToken,
    internalTokens,
    internalTokenDigests,
    internalRpc: {
      registry: allRpc || isSet("REGISTRY_PORT") || isSet("REGISTRY_GRPC_PORT"),
      deliverer: allRpc || isSet("DELIVERER_PORT") || isSet("DELIVERER_GRPC_PORT"),
    },
    grpcTls:
      tlsFiles.length === 3
        ? { certFile: env.GRPC_TLS_CERT_FILE!, keyFile: env.GRPC_TLS_KEY_FILE!, clientCaFile: env.GRPC_TLS_CLIENT_CA_FILE! }
        : undefined,
    internalTls: httpsFiles.length === 2 ? { certFile: env.INTERNAL_TLS_CERT_FILE!, keyFile: env.INTERNAL_TLS_KEY_FILE! } : undefined,
    internalTlsCaFile: env.INTERNAL_TLS_CA_FILE || undefined,
    appSecret,
    tronNodeUrls: {
      "tron:mainnet": str(env, NODE_URL_VARIABLES["tron:mainnet"], "https://api.trongrid.io"),
      "tron:nile": str(env, NODE_URL_VARIABLES["tron:nile"], "https://nile.trongrid.io"),
      "tron:shasta": str(env, NODE_URL_VARIABLES["tron:shasta"], "https://api.shasta.trongrid.io"),
    },
    trongridApiKey: env.TRONGRID_API_KEY || undefined,
    retrySchedule: parseRetrySchedule(str(env, "RETRY_SCHEDULE", DEFAULT_RETRY_SCHEDULE)),
    ssrfAllowCidrs: str(env, "SSRF_ALLOW_CIDRS", "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
    deliveryCaFile: env.DELIVERY_CA_FILE || undefined,
    deliveryTimeoutMs: int(env, "DELIVERY_TIMEOUT_MS", 15_000),
    rateLimitRps: int(env, "RATE_LIMIT_RPS", 50),
    rateLimitBurst: int(env, "RATE_LIMIT_BURST", 100),
    unknownKeyRateLimitRps: int(env, "UNKNOWN_KEY_RATE_LIMIT_RPS", 10),
    unknownKeyRateLimitBurst: int(env, "UNKNOWN_KEY_RATE_LIMIT_BURST", 100),
    matcherPollMs: env.MATCHER_POLL_MS ? int(env, "MATCHER_POLL_MS", 0) : undefined,
    matcherConfirmations: env.MATCHER_CONFIRMATIONS ? int(env, "MATCHER_CONFIRMATIONS", 19) : undefined,
    maxAddressesPerSubscription: int(env, "MAX_ADDRESSES_PER_SUBSCRIPTION", 1_000_000),
    quotas: quotaDefaults(env),
    eventRetentionDays,
    matcherChains: env.MATCHER_CHAINS ? parseChainList(env.MATCHER_CHAINS) : [...TRON_CHAINS],
    blacklistContracts: parseBlacklistContracts(str(env, "BLACKLIST_CONTRACTS", DEFAULT_BLACKLIST_CONTRACTS)),
    backfill: loadBackfillConfig(env),
    logLevel: str(env, "LOG_LEVEL", "info"),
  };
}
