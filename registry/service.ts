// The registry's Connect handlers: SubscriptionService, ApiKeyService, WatchIndexService. Handlers throw ApiError;
// common/rpc.ts carries it as ErrorInfo. The address RPCs and the index rebuild are `ctx.addresses`
// (registry/addresses.ts).
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { type ConnectRouter, type ServiceImpl } from "@connectrpc/connect";
import { IdempotencyResultSchema, type IdempotencyRequest } from "../gen/webhooks/common/v1/error_pb.ts";
import {
  ApiKeyService,
  SubscriptionResponseSchema,
  SubscriptionService,
  WatchIndexService,
  type ApiKey,
  type ApiKeySchema,
  type Destination,
  type SubscriptionResponse,
  type DeliveryTargetSchema,
  type MatchConditions as MatchConditionsMessage,
  type MatchConditionsSchema,
  type SubscriptionSchema,
} from "../gen/webhooks/registry/v1/registry_pb.ts";
import type { MatchConditions } from "../common/match-conditions.ts";
import { ApiError, INLINE_ADDRESSES, invalidRequest, notFound } from "../common/contract/index.ts";
import type { HoldReason } from "../common/hold-reasons.ts";
import { isId } from "../common/ids.ts";
import type { Logger } from "../common/logger.ts";
import type { TokenKeys } from "../common/keyring.ts";
import { decodePageToken, pageLimit, pageOf, type PageScope } from "../common/page-token.ts";
import type { RegisterRoutes } from "../common/rpc.ts";
import { checkGrant, type QueueTarget } from "./broker-grants.ts";
import { checkSubscriptionQuota, quotasMessage } from "./quotas.ts";
import type { QuotaLimits } from "../common/quotas.ts";
import { checkDestinationType, checkExchange, checkRoutingKey, checkSubject, isBrokerName, type DestinationType } from "./destination.ts";
import {
  checkDescription,
  checkEvents,
  checkGivenSecret,
  checkGracePeriod,
  checkKeyChains,
  checkMatch,
  checkStatus,
  generateSigningSecret,
} from "./rules.ts";
import { idempotentReplays, instrument, unreadableTargets } from "./metrics.ts";
import type { ApiKeyRow, SubscriptionRow } from "./schema.ts";
import type { IdempotentOutcome } from "../common/idempotency.ts";
import type { RegistryExecutor } from "./db/connection.ts";
import type { RegistryStore } from "./db/store.ts";
import type { AddressRef, Changed, DestinationFields, SubscriptionCursor, SubscriptionFields } from "./db/types.ts";
import type { OutboxTicket } from "./watch-index/outbox.ts";
import { BackfillService } from "../gen/webhooks/registry/v1/backfill_pb.ts";
import { backfillService, type BackfillContext } from "./backfills.ts";

/** The address RPCs and the watch-index rebuild, implemented in registry/addresses.ts. */
export type AddressRpcs = Pick<
  ServiceImpl<typeof SubscriptionService>,
  "patchAddresses" | "replaceAddresses" | "listAddresses"
> &
  ServiceImpl<typeof WatchIndexService>;

export interface RegistryContext {
  store: RegistryStore;
  /** Sign (the first) and verify (any) page tokens: APP_SECRET's keyring. */
  tokenKeys: TokenKeys;
  /**
   * The request-time check of a destination URL (shape, DNS, SSRF); throws the public ApiError. Returns the URL's
   * normalized form, which is what is stored and returned.
   */
  checkDestination(url: string): Promise<string>;
  /**
   * The watch index: a change that touched it waits (bounded) until its outbox rows are applied, so the answer means
   * the matcher sees it (registry/watch-index/settle.ts).
   */
  index: { settle(ticket: OutboxTicket): Promise<void> };
  addresses: AddressRpcs;
  /** The operator's default quotas (QUOTA_*); a key's own overrides win (registry/quotas.ts). */
  quotas: QuotaLimits;
  /** Backfill jobs (registry/backfills.ts): the node their ranges are resolved against, and the limits. */
  backfill: Pick<BackfillContext, "chains" | "limits">;
  log: Logger;
}

type SubscriptionInit = MessageInitShape<typeof SubscriptionSchema>;

export interface SubscriptionView {
  /** Plain secret, only on create and rotate responses. */
  secret?: string;
  addresses?: AddressRef[];
  hasMore?: boolean;
}

/** Stored conditions as the message every representation carries: every field set, `assets` unset for "every asset". */
function matchMessage(m: MatchConditions): MessageInitShape<typeof MatchConditionsSchema> {
  return {
    assets: m.assets ? { items: m.assets.map((a) => ({ ...a })) } : undefined,
    directions: { items: [...m.directions] },
    includeZeroValue: m.includeZeroValue,
  };
}

export function subscriptionMessage(row: SubscriptionRow, view: SubscriptionView = {}): SubscriptionInit {
  return {
    id: row.id,
    destination: { ...destinationMessage(row), secret: view.secret ?? "" },
    events: row.events,
    addresses: view.addresses ?? [],
    hasMore: view.hasMore ?? false,
    status: row.status,
    description: row.description,
    dateCreatedMs: BigInt(row.createdAt.getTime()),
    dateUpdatedMs: BigInt(row.updatedAt.getTime()),
    match: matchMessage(row.match),
  };
}

/** The destination as it was given: only the fields of its type. */
type DestinationInit = { type: string; url?: string; broker?: string; exchange?: string; routingKey?: string; subject?: string };

function destinationMessage(row: SubscriptionRow): DestinationInit {
  switch (row.destinationType) {
    case "amqp":
      return { type: "amqp", broker: row.broker ?? "", exchange: row.exchange ?? "", routingKey: row.routingKey ?? "" };
    case "nats":
      return { type: "nats", broker: row.broker ?? "", subject: row.subject ?? "" };
    default:
      return { type: "https", url: row.url };
  }
}

function apiKeyMessage(row: ApiKeyRow): MessageInitShape<typeof ApiKeySchema> {
  return {
    id: row.id,
    name: row.name,
    chains: row.chains,
    dateCreatedMs: BigInt(row.createdAt.getTime()),
    dateRevokedMs: row.revokedAt ? BigInt(row.revokedAt.getTime()) : 0n,
    quotas: quotasMessage(row),
  };
}

function subscriptionsScope(keyId: string): PageScope {
  return { list: "subscriptions", keyId, parent: "" };
}

function withReplay(outcome: IdempotentOutcome<SubscriptionResponse>): SubscriptionResponse {
  if (outcome.replayedFrom !== undefined) {
    idempotentReplays.inc();
    outcome.message.idempotency = create(IdempotencyResultSchema, { replayed: true, originalRequestId: outcome.replayedFrom });
  }
  return outcome.message;
}

function isCursor(value: unknown): value is SubscriptionCursor {
  const c = value as SubscriptionCursor | undefined;
  return typeof c === "object" && c !== null && Number.isSafeInteger(c.t) && typeof c.id === "string" && isId("sub", c.id);
}

/** The destination's own fields, checked without I/O; the broker's existence and the URL's DNS come later. */
function destinationShape(d: Destination): DestinationFields {
  const type: DestinationType = checkDestinationType(d.type);
  if (type === "https") {
    if (d.url === "") throw invalidRequest("destination.url is required.", "/destination/url");
    return { destinationType: type, url: d.url, broker: null, exchange: null, routingKey: null, subject: null };
  }
  if (d.broker === "") throw invalidRequest("destination.broker is required.", "/destination/broker");
  if (!isBrokerName(d.broker)) {
    throw invalidRequest(`No ${type} broker named "${d.broker}" is registered.`, "/destination/broker");
  }
  const base = { destinationType: type, url: "", broker: d.broker, exchange: null, routingKey: null, subject: null };
  if (type === "amqp") return { ...base, exchange: checkExchange(d.exchange), routingKey: checkRoutingKey(d.routingKey) };
  return { ...base, subject: checkSubject(d.subject) };
}

/**
 * A queue destination's broker must be registered, of the destination's type, and the key's grants there must cover
 * its exchange or subject (registry/broker-grants.ts). A broker the key has no grant on answers as an unknown one.
 */
async function checkBroker(ctx: RegistryContext, keyId: string, destination: DestinationFields): Promise<void> {
  const type = destination.destinationType;
  const name = destination.broker!;
  const [broker, grants] = await Promise.all([ctx.store.getBroker(name), ctx.store.brokerGrants(name)]);
  if (!broker) {
    throw invalidRequest(`No ${type} broker named "${name}" is registered.`, "/destination/broker");
  }
  if (broker.type !== type) {
    throw invalidRequest(`The broker "${name}" is ${broker.type === "amqp" ? "an" : "a"} ${broker.type} broker, not ${type}.`, "/destination/broker");
  }
  checkGrant({ type: type as QueueTarget["type"], broker: name, exchange: destination.exchange, routingKey: destination.routingKey, subject: destination.subject }, keyId, grants);
}

/**
 * The checks create and PUT share; the I/O (the broker lookup, or the URL's DNS and SSRF check) runs last, after
 * every cheap check passed.
 */
async function checkSubscriptionFields(
  ctx: RegistryContext,
  input: { keyId: string; destination?: Destination; events: string[]; status: string; description: string; match?: MatchConditionsMessage },
): Promise<SubscriptionFields> {
  if (!input.destination) {
    throw invalidRequest("destination is required.", "/destination");
  }
  const destination = destinationShape(input.destination);
  const events = checkEvents(input.events);
  const status = checkStatus(input.status);
  const description = checkDescription(input.description);
  const match = checkMatch(input.match);
  if (destination.broker !== null) {
    await checkBroker(ctx, input.keyId, destination);
    return { ...destination, events, status, description, match };
  }
  // The URL as stored and returned: normalized once by the check (common/ssrf.ts).
  const url = await ctx.checkDestination(destination.url);
  return { ...destination, url, events, status, description, match };
}

/** The committed change's row once the watch index reflects it (undefined: nothing was there to change). */
async function settled<T>(ctx: RegistryContext, change: Promise<Changed<T> | undefined>): Promise<T | undefined> {
  const done = await change;
  if (done) await ctx.index.settle(done.ticket);
  return done?.row;
}

function subscriptionService(ctx: RegistryContext): ServiceImpl<typeof SubscriptionService> {
  const { store } = ctx;
  /**
   * Create and rotate: answer a finished request from its record before any validation or DNS lookup, then
   * validate (`prepare`), then run the effect and record its response in one transaction.
   */
  async function idempotentSubscription(
    keyId: string,
    scope: string,
    idem: IdempotencyRequest | undefined,
    prepare: () => Promise<(ex: RegistryExecutor) => Promise<{ row: SubscriptionRow; view: SubscriptionView } | undefined>>,
  ) {
    const early = await store.peekIdempotent(SubscriptionResponseSchema, keyId, scope, idem);
    if (early) return { response: withReplay(early) };
    const effect = await prepare();
    const outcome = await store.idempotent(SubscriptionResponseSchema, keyId, scope, idem, async (tx) => {
      const done = await effect(tx);
      if (!done) throw notFound("subscription");
      return create(SubscriptionResponseSchema, { subscription: subscriptionMessage(done.row, done.view) });
    });
    return { response: withReplay(outcome) };
  }

  return {
    async createSubscription(req) {
      const { response } = await idempotentSubscription(req.keyId, "POST /v1/subscriptions", req.idempotency, async () => {
        const fields = await checkSubscriptionFields(ctx, req);
        const secret = generateSigningSecret();
        return async (tx) => {
          await checkSubscriptionQuota(tx, req.keyId, ctx.quotas);
          const row = await store.insertSubscription(tx, { keyId: req.keyId, ...fields, secret });
          return { row, view: { secret, addresses: [], hasMore: false } };
        };
      });
      // No watch-index write: the index only knows subscriptions that watch an address (the first PATCH/PUT of
      // addresses writes their status and kinds with them), and a new subscription watches none.
      return response;
    },

    async listSubscriptions(req) {
      const limit = pageLimit(req.limit);
      const scope = subscriptionsScope(req.keyId);
      const cursor = decodePageToken(ctx.tokenKeys, scope, req.pageToken, isCursor);
      const rows = await store.listSubscriptions(req.keyId, limit, cursor);
      const page = pageOf(ctx.tokenKeys, scope, rows, limit, (last): SubscriptionCursor => ({ t: last.createdAt.getTime(), id: last.id }));
      return { items: page.items.map((row) => subscriptionMessage(row)), nextPageToken: page.nextPageToken };
    },

    async getSubscription(req) {
      if (!isId("sub", req.id)) throw notFound("subscription");
      const found = await store.getSubscriptionWithAddresses(req.keyId, req.id, INLINE_ADDRESSES);
      if (!found) throw notFound("subscription");
      return { subscription: subscriptionMessage(found.row, { addresses: found.items, hasMore: found.hasMore }) };
    },

    async updateSubscription(req) {
      if (!isId("sub", req.id)) throw notFound("subscription");
      // A missing subscription is 404 even when the body is also wrong: look first (cheap), then validate.
      if (!(await store.getSubscription(req.keyId, req.id))) throw notFound("subscription");
      const fields = await checkSubscriptionFields(ctx, req);
      const row = await settled(ctx, store.updateSubscription(req.keyId, req.id, fields));
      if (!row) throw notFound("subscription");
      return { subscription: subscriptionMessage(row, { addresses: [], hasMore: false }) };
    },

    async deleteSubscription(req) {
      if (!isId("sub", req.id)) throw notFound("subscription");
      const row = await settled(ctx, store.deleteSubscription(req.keyId, req.id));
      if (!row) throw notFound("subscription");
      return {};
    },

    async rotateSecret(req) {
      if (!isId("sub", req.id)) throw notFound("subscription");
      const scope = `POST /v1/subscriptions/${req.id}/secrets/rotate`;
      // The watch index holds no secrets: a rotation has nothing to tell it.
      const { response } = await idempotentSubscription(req.keyId, scope, req.idempotency, async () => {
        const graceSeconds = checkGracePeriod(req.gracePeriodSeconds);
        const secret = req.secret === "" ? generateSigningSecret() : checkGivenSecret(req.secret);
        return async (tx) => {
          const row = await store.rotateSecret(tx, req.keyId, req.id, secret, graceSeconds * 1000);
          if (!row) return undefined;
          const inline = await store.inlineAddresses(tx, row.id, INLINE_ADDRESSES);
          return { row, view: { secret, addresses: inline.items, hasMore: inline.hasMore } };
        };
      });
      return response;
    },

    async getDeliveryTargets(req) {
      const ids = [...new Set(req.subscriptionIds)];
      const found = new Map(
        (await store.deliveryTargets(ids.filter((id) => isId("sub", id)))).map((t) => [t.subscription.id, t]),
      );
      const now = Date.now();
      const targets: MessageInitShape<typeof DeliveryTargetSchema>[] = ids.map((id) => {
        const t = found.get(id);
        if (!t) return { subscriptionId: id, exists: false, active: false };
        const enabled = t.subscription.status === "enabled";
        const revoked = t.key.revokedAt !== null;
        // An unreadable secret holds this target alone (its events kept), never the whole answer.
        const credentials = store.deliveryCredentials(t, now);
        if (!credentials.ok) {
          unreadableTargets.inc({ field: credentials.unreadable });
          ctx.log.error("delivery target unreadable; its deliveries are held", { subscriptionId: id, field: credentials.unreadable });
        }
        const holdReason: HoldReason | "" = !enabled ? "subscription_disabled" : revoked ? "key_revoked" : credentials.ok ? "" : "secret_unreadable";
        return {
          subscriptionId: id,
          exists: true,
          active: enabled && !revoked,
          url: t.subscription.url,
          secrets: credentials.ok ? credentials.secrets : [],
          keyId: t.key.id,
          chains: t.key.chains,
          destination: destinationMessage(t.subscription),
          brokerUrl: credentials.ok ? credentials.brokerUrl : "",
          holdReason,
          keyDeliveriesQuota: t.key.quotaDeliveries ?? undefined,
        };
      });
      return { targets };
    },

    patchAddresses: (req, c) => ctx.addresses.patchAddresses(req, c),
    replaceAddresses: (req, c) => ctx.addresses.replaceAddresses(req, c),
    listAddresses: (req, c) => ctx.addresses.listAddresses(req, c),
  };
}

function apiKeyService(ctx: RegistryContext): ServiceImpl<typeof ApiKeyService> {
  const { store } = ctx;
  return {
    async createApiKey(req) {
      const chains = checkKeyChains(req.chains, true);
      const issued = await store.createApiKey(req.name, chains);
      return { key: apiKeyMessage(issued.row), secret: issued.secret };
    },
    async listApiKeys() {
      return { keys: (await store.listApiKeys()).map(apiKeyMessage) };
    },
    async revokeApiKey(req) {
      if (!isId("key", req.id)) throw notFound("API key");
      const row = await settled(ctx, store.revokeApiKey(req.id));
      if (!row) throw notFound("API key");
      return { key: apiKeyMessage(row) };
    },
    async setApiKeyChains(req) {
      if (!isId("key", req.id)) throw notFound("API key");
      const chains = checkKeyChains(req.chains, false);
      const row = await settled(ctx, store.setApiKeyChains(req.id, chains));
      if (!row) throw notFound("API key");
      return { key: apiKeyMessage(row) };
    },
    async resolveApiKey(req) {
      const row = await store.findApiKeyBySecret(req.secret);
      if (!row || row.revokedAt !== null) return { valid: false };
      return { valid: true, key: apiKeyMessage(row) };
    },
    async checkAuthReady() {
      await store.pingMainPool();
      return {};
    },
  };
}

function watchIndexService(ctx: RegistryContext): ServiceImpl<typeof WatchIndexService> {
  return {
    rebuildWatchIndex: (req, c) => ctx.addresses.rebuildWatchIndex(req, c),
  };
}

export function registryRoutes(ctx: RegistryContext): RegisterRoutes {
  return (router: ConnectRouter) => {
    router.service(SubscriptionService, instrument(subscriptionService(ctx)));
    router.service(ApiKeyService, instrument(apiKeyService(ctx)));
    router.service(WatchIndexService, instrument(watchIndexService(ctx)));
    router.service(BackfillService, instrument(backfillService({ store: ctx.store, tokenKeys: ctx.tokenKeys, ...ctx.backfill })));
  };
}

export type { ApiKey };
