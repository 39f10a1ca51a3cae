// The registry's persistence, one module per use (this folder), composed for the callers that hold one store:
// subscriptions, API keys, brokers and idempotency records on PostgreSQL (Drizzle, Bun SQL). Every public call runs
// through `run` and every write through `write` (common/db.ts), so a dead or cut database answers 503
// service_unavailable within a bounded time instead of a 500 or a hang. Business rules live in service.ts; this
// module only stores and reads, and its methods hand over to their use's module.
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { sql } from "drizzle-orm";
import { STORE_DEADLINE_MS } from "../../common/deadlines.ts";
import { guard, writeTransaction } from "../../common/db.ts";
import type { IdempotentOutcome } from "../../common/idempotency.ts";
import type { Keyring } from "../../common/keyring.ts";
import type { QuotaOverrides } from "../../common/quotas.ts";
import type { IdempotencyRequest } from "../../gen/webhooks/common/v1/error_pb.ts";
import { deliveryCredentials } from "../delivery-credentials.ts";
import { databaseUnavailable } from "../metrics.ts";
import type { ApiKeyRow, BrokerGrantRow, BrokerRow, SubscriptionRow } from "../schema.ts";
import { ApiKeys, type IssuedApiKey } from "./api-keys.ts";
import { Brokers } from "./brokers.ts";
import type { RegistryAccess, RegistryDb, RegistryExecutor, RegistryTx } from "./connection.ts";
import { RegistryIdempotency } from "./idempotency.ts";
import { Subscriptions } from "./subscriptions.ts";
import type {
  AddressRef,
  BrokerInfo,
  Changed,
  DeliveryCredentials,
  DeliveryTargetRow,
  NewSubscription,
  SubscriptionCursor,
  SubscriptionFields,
} from "./types.ts";

export interface RegistryStoreOptions {
  /** APP_SECRET's keyring: seals secrets and stored responses at rest. */
  keyring: Keyring;
  deadlineMs?: number;
  /** The pool of the hot reads (openRegistryReadPool); default: the main pool. Closed with the store. */
  readDb?: RegistryDb;
}

export class RegistryStore implements RegistryAccess {
  readonly db: RegistryDb;
  readonly readDb: RegistryDb;
  readonly apiKeys: ApiKeys;
  readonly subscriptions: Subscriptions;
  readonly brokers: Brokers;
  readonly idempotency: RegistryIdempotency;
  private readonly keyring: Keyring;
  private readonly deadlineMs: number;

  constructor(db: RegistryDb, opts: RegistryStoreOptions) {
    this.db = db;
    this.readDb = opts.readDb ?? db;
    this.keyring = opts.keyring;
    this.deadlineMs = opts.deadlineMs ?? STORE_DEADLINE_MS;
    this.subscriptions = new Subscriptions(this);
    this.apiKeys = new ApiKeys(this);
    this.brokers = new Brokers(this);
    this.idempotency = new RegistryIdempotency(this, opts.keyring);
  }

  /** Runs any database work under the store's 503 and deadline rules (for modules building on this store). */
  run<T>(fn: (db: RegistryDb) => Promise<T>, deadlineMs = this.deadlineMs): Promise<T> {
    return guard(() => fn(this.db), { deadlineMs, onUnavailable: () => databaseUnavailable.inc() });
  }

  /**
   * A write in one transaction under the commit fence (common/db.ts writeTransaction): a deadline before COMMIT
   * answers 503 and rolls it back; after COMMIT was sent, the answer waits for COMMIT's outcome. Every subscription
   * write goes through here.
   */
  write<T>(fn: (tx: RegistryTx) => Promise<T>, deadlineMs = this.deadlineMs): Promise<T> {
    return writeTransaction(this.db, fn, { deadlineMs, onUnavailable: () => databaseUnavailable.inc() });
  }

  /** Seals `plaintext` for the row `binding` names (registry/sealed-columns.ts). */
  seal(plaintext: string, binding: string): string {
    return this.keyring.seal(plaintext, binding);
  }

  open(sealed: string, binding: string): string {
    return this.keyring.open(sealed, binding);
  }

  async ping(): Promise<boolean> {
    const pools = this.readDb === this.db ? [this.db] : [this.db, this.readDb];
    await guard(() => Promise.all(pools.map((db) => db.execute(sql`select 1`))), { deadlineMs: 2_000, onUnavailable: () => databaseUnavailable.inc() });
    return true;
  }

  /**
   * `select 1` on the main pool alone: the gateway's readiness probe of authentication, kept off the read pool so a
   * flood of key lookups queued there cannot fail it.
   */
  async pingMainPool(): Promise<boolean> {
    await guard(() => this.db.execute(sql`select 1`), { deadlineMs: 2_000, onUnavailable: () => databaseUnavailable.inc() });
    return true;
  }

  async close(): Promise<void> {
    if (this.readDb !== this.db) await this.readDb.$client.close();
    await this.db.$client.close();
  }

  // ---- API keys (api-keys.ts) ----

  createApiKey(name: string, chains: string[]): Promise<IssuedApiKey> {
    return this.apiKeys.createApiKey(name, chains);
  }

  listApiKeys(): Promise<ApiKeyRow[]> {
    return this.apiKeys.listApiKeys();
  }

  getApiKey(id: string): Promise<ApiKeyRow | undefined> {
    return this.apiKeys.getApiKey(id);
  }

  setApiKeyQuotas(id: string, overrides: QuotaOverrides): Promise<ApiKeyRow | undefined> {
    return this.apiKeys.setApiKeyQuotas(id, overrides);
  }

  findApiKeyBySecret(secret: string): Promise<ApiKeyRow | undefined> {
    return this.apiKeys.findApiKeyBySecret(secret);
  }

  revokeApiKey(id: string): Promise<Changed<ApiKeyRow> | undefined> {
    return this.apiKeys.revokeApiKey(id);
  }

  setApiKeyChains(id: string, chains: string[]): Promise<Changed<ApiKeyRow> | undefined> {
    return this.apiKeys.setApiKeyChains(id, chains);
  }

  // ---- subscriptions (subscriptions.ts) ----

  insertSubscription(tx: RegistryExecutor, input: NewSubscription): Promise<SubscriptionRow> {
    return this.subscriptions.insertSubscription(tx, input);
  }

  getSubscription(keyId: string, id: string): Promise<SubscriptionRow | undefined> {
    return this.subscriptions.getSubscription(keyId, id);
  }

  findSubscription(ex: RegistryExecutor, keyId: string, id: string, forUpdate = false): Promise<SubscriptionRow | undefined> {
    return this.subscriptions.findSubscription(ex, keyId, id, forUpdate);
  }

  getSubscriptionWithAddresses(
    keyId: string,
    id: string,
    limit: number,
  ): Promise<{ row: SubscriptionRow; items: AddressRef[]; hasMore: boolean } | undefined> {
    return this.subscriptions.getSubscriptionWithAddresses(keyId, id, limit);
  }

  listSubscriptions(keyId: string, limit: number, after: SubscriptionCursor | undefined): Promise<SubscriptionRow[]> {
    return this.subscriptions.listSubscriptions(keyId, limit, after);
  }

  updateSubscription(keyId: string, id: string, fields: SubscriptionFields): Promise<Changed<SubscriptionRow> | undefined> {
    return this.subscriptions.updateSubscription(keyId, id, fields);
  }

  deleteSubscription(keyId: string, id: string): Promise<Changed<SubscriptionRow> | undefined> {
    return this.subscriptions.deleteSubscription(keyId, id);
  }

  rotateSecret(tx: RegistryExecutor, keyId: string, id: string, secret: string, graceMs: number): Promise<SubscriptionRow | undefined> {
    return this.subscriptions.rotateSecret(tx, keyId, id, secret, graceMs);
  }

  inlineAddresses(ex: RegistryExecutor, subscriptionId: string, limit: number): Promise<{ items: AddressRef[]; hasMore: boolean }> {
    return this.subscriptions.inlineAddresses(ex, subscriptionId, limit);
  }

  deliveryTargets(ids: string[]): Promise<DeliveryTargetRow[]> {
    return this.subscriptions.deliveryTargets(ids);
  }

  /** A target's secrets and broker URL in clear, under this store's keyring (registry/delivery-credentials.ts). */
  deliveryCredentials(t: DeliveryTargetRow, now = Date.now()): DeliveryCredentials {
    return deliveryCredentials((sealed, binding) => this.open(sealed, binding), t, now);
  }

  // ---- brokers (brokers.ts) ----

  getBroker(name: string): Promise<BrokerRow | undefined> {
    return this.brokers.getBroker(name);
  }

  brokerGrants(broker: string): Promise<BrokerGrantRow[]> {
    return this.brokers.brokerGrants(broker);
  }

  grantBroker(grant: { broker: string; keyId: string; prefix: string; defaultExchange: boolean }): Promise<boolean> {
    return this.brokers.grantBroker(grant);
  }

  revokeBrokerGrant(broker: string, keyId: string, prefix?: string): Promise<number> {
    return this.brokers.revokeBrokerGrant(broker, keyId, prefix);
  }

  listBrokerGrants(broker?: string): Promise<BrokerGrantRow[]> {
    return this.brokers.listBrokerGrants(broker);
  }

  addBroker(name: string, type: string, url: string): Promise<boolean> {
    return this.brokers.addBroker(name, type, url);
  }

  listBrokers(): Promise<BrokerInfo[]> {
    return this.brokers.listBrokers();
  }

  removeBroker(name: string): Promise<{ removed: boolean; usedBy: number }> {
    return this.brokers.removeBroker(name);
  }

  // ---- idempotency (idempotency.ts) ----

  idempotent<Desc extends DescMessage>(
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest | undefined,
    effect: (ex: RegistryExecutor) => Promise<MessageShape<Desc>>,
  ): Promise<IdempotentOutcome<MessageShape<Desc>>> {
    return this.idempotency.idempotent(schema, keyId, scope, idem, effect);
  }

  peekIdempotent<Desc extends DescMessage>(
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest | undefined,
  ): Promise<IdempotentOutcome<MessageShape<Desc>> | undefined> {
    return this.idempotency.peekIdempotent(schema, keyId, scope, idem);
  }

  purgeExpiredIdempotency(): Promise<number> {
    return this.idempotency.purgeExpiredIdempotency();
  }
}
