// The registry's persistence: subscriptions, API keys and idempotency records on PostgreSQL (Drizzle, Bun SQL).
// Every public call runs through `guard` and every write through `writeTransaction` (common/db.ts), so a dead or cut
// database answers 503 service_unavailable within a bounded time instead of a 500 or a hang. Business rules live in
// service.ts; this module only stores and reads.
import { randomBytes } from "node:crypto";
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { and, asc, desc, eq, inArray, sql } from "drizzle-orm";
import { maskBrokerUrl } from "./destination.ts";
import { IdempotencyLedger, isKeyed, type IdempotentOutcome } from "../common/idempotency.ts";
import type { IdempotencyRequest } from "../gen/webhooks/common/v1/error_pb.ts";
import { sha256Hex } from "../common/crypto.ts";
import type { Keyring } from "../common/keyring.ts";
import { STORE_DEADLINE_MS } from "../common/deadlines.ts";
import { SETTINGS_MIGRATIONS } from "../common/settings/migrate.ts";
import { guard, openDatabase, openMigratedDatabase, writeTransaction, type Database, type DbOptions } from "../common/db.ts";
import { newId } from "../common/ids.ts";
import type { MatchConditions } from "../common/match-conditions.ts";
import { databaseUnavailable } from "./metrics.ts";
import { recordIndexChanges, type OutboxTicket } from "./watch-index/outbox.ts";
import { brokerUrlBinding, subscriptionSecretBinding } from "./sealed-columns.ts";
import {
  apiKeys,
  idempotencyRecords,
  registrySchema,
  subscriptionAddresses,
  brokers,
  brokerGrants,
  subscriptions,
  type ApiKeyRow,
  type BrokerGrantRow,
  type BrokerRow,
  type RegistrySchema,
  type SubscriptionRow,
} from "./schema.ts";

export type RegistryDb = Database<RegistrySchema>;
export type RegistryTx = Parameters<Parameters<RegistryDb["transaction"]>[0]>[0];
/** Either the pool or an open transaction: queries that may run inside someone else's transaction take this. */
export type RegistryExecutor = RegistryDb | RegistryTx;

export const REGISTRY_MIGRATIONS = new URL("./migrations", import.meta.url).pathname;
export const REGISTRY_MIGRATIONS_TABLE = "__registry_migrations";

/**
 * Connections of the read pool: the hot single-statement reads (GetSubscription, ResolveApiKey, the existence check
 * of PUT) run on their own small pool. Under 64 concurrent GETs, 4 connections answered about 35% more than the
 * main pool's 20 (fewer PostgreSQL backends competing for 2 cores), while commits want many connections (create
 * halved on 4), so writes and transactions stay on the main pool.
 */
export const READ_POOL_SIZE = 4;

export function openRegistryReadPool(url: string, max = READ_POOL_SIZE): RegistryDb {
  return openDatabase(url, registrySchema, { max }) as RegistryDb;
}

export async function openRegistryDatabase(url: string, opts: DbOptions = {}): Promise<RegistryDb> {
  const own = { folder: REGISTRY_MIGRATIONS, table: REGISTRY_MIGRATIONS_TABLE };
  return openMigratedDatabase(url, registrySchema, [own, SETTINGS_MIGRATIONS], opts);
}

// ---------------------------------------------------------------------------------------------------------------
// API keys

export interface IssuedApiKey {
  row: ApiKeyRow;
  /** "whk_" + 43 base64url characters; shown once, only its SHA-256 is kept. */
  secret: string;
}

const API_KEY_PATTERN = /^whk_[A-Za-z0-9_-]{43}$/;

function generateApiKeySecret(): string {
  return "whk_" + randomBytes(32).toString("base64url");
}

function hashApiKey(secret: string): string {
  return sha256Hex(secret);
}

// ---------------------------------------------------------------------------------------------------------------
// Subscriptions

/** Where a subscription's events go: `url` for https ("" otherwise), the broker and its target for queues (null otherwise). */
export interface DestinationFields {
  destinationType: string;
  url: string;
  broker: string | null;
  exchange: string | null;
  routingKey: string | null;
  subject: string | null;
}

export interface SubscriptionFields extends DestinationFields {
  events: string[];
  status: string;
  description: string;
  match: MatchConditions;
}

export interface NewSubscription extends SubscriptionFields {
  keyId: string;
  /** Plain "whsec_..." secret; stored encrypted. */
  secret: string;
}

/** A registered broker as the CLI shows it: the URL with its password masked. */
export interface BrokerInfo {
  name: string;
  type: string;
  maskedUrl: string;
  createdAt: Date;
}

export interface SubscriptionCursor {
  /** created_at in Unix ms. */
  t: number;
  id: string;
}

/** A committed change and the watch index's outbox rows it left (what the caller waits on: registry/watch-index/settle.ts). */
export interface Changed<T> {
  row: T;
  ticket: OutboxTicket;
}

export interface AddressRef {
  chainId: string;
  address: string;
}

export interface DeliveryTargetRow {
  subscription: SubscriptionRow;
  key: ApiKeyRow;
  /** The queue destination's broker; null for https. */
  broker: BrokerRow | null;
}

/** A target's secrets and broker URL in clear, or which stored value cannot be decrypted. */
export type DeliveryCredentials =
  | { ok: true; secrets: string[]; brokerUrl: string }
  | { ok: false; unreadable: "secret" | "previous_secret" | "broker_url" };

export interface RegistryStoreOptions {
  /** APP_SECRET's keyring: seals secrets and stored responses at rest. */
  keyring: Keyring;
  deadlineMs?: number;
  /** The pool of the hot reads (openRegistryReadPool); default: the main pool. Closed with the store. */
  readDb?: RegistryDb;
}

/**
 * The hot reads, built once: drizzle assembling the SQL text on every call cost about half the registry's CPU on
 * GET, and about a third of the whole request's on a list page of 50 (bench api). Prepared on the pool, so they
 * serve callers outside a transaction only.
 */
function prepareHotQueries(readDb: RegistryDb) {
  const id = sql.placeholder("id");
  const keyId = sql.placeholder("keyId");
  return {
    subscriptionWithAddresses: readDb
      .select({
        row: subscriptions,
        // One text of "chain address" pairs, space-separated (chain ids and base58 addresses never hold a space:
        // both are validated before they are stored). json_agg(json_build_array(…)) cost PostgreSQL about 0.11 ms
        // more per 200 addresses and the driver more to decode, for the same list (bench api, GET by id).
        addresses: sql<string | null>`(
          select string_agg(a.chain_id || ' ' || a.address, ' ' order by a.seq)
          from (
            select ${subscriptionAddresses.chainId} as chain_id, ${subscriptionAddresses.address} as address,
                   ${subscriptionAddresses.seq} as seq
            from ${subscriptionAddresses}
            where ${subscriptionAddresses.subscriptionId} = ${subscriptions.id}
            order by ${subscriptionAddresses.seq}
            limit ${sql.placeholder("limit")}
          ) a
        )`,
      })
      .from(subscriptions)
      .where(and(eq(subscriptions.id, id), eq(subscriptions.keyId, keyId)))
      .prepare("registry_subscription_with_addresses"),
    subscription: readDb
      .select()
      .from(subscriptions)
      .where(and(eq(subscriptions.id, id), eq(subscriptions.keyId, keyId)))
      .prepare("registry_subscription"),
    // A page of the list, newest first, and the page after a cursor (created_at, id): the same keyset order the
    // index subscriptions_key_page_idx serves.
    firstPage: readDb
      .select()
      .from(subscriptions)
      .where(eq(subscriptions.keyId, keyId))
      .orderBy(desc(subscriptions.createdAt), desc(subscriptions.id))
      .limit(sql.placeholder("limit"))
      .prepare("registry_subscriptions_first_page"),
    pageAfter: readDb
      .select()
      .from(subscriptions)
      .where(
        and(
          eq(subscriptions.keyId, keyId),
          sql`(${subscriptions.createdAt}, ${subscriptions.id}) < (${sql.placeholder("afterT")}::timestamptz, ${sql.placeholder("afterId")})`,
        ),
      )
      .orderBy(desc(subscriptions.createdAt), desc(subscriptions.id))
      .limit(sql.placeholder("limit"))
      .prepare("registry_subscriptions_page_after"),
    // The deliverer's targets (subscription, key, broker) by id; the ids travel as one JSON array text, so any
    // number of them fits one prepared statement. Built per call it cost about 200 µs of CPU for one id (POST
    // …/test asks for its target fresh on every call).
    deliveryTargets: readDb
      .select({ subscription: subscriptions, key: apiKeys, broker: brokers })
      .from(subscriptions)
      .innerJoin(apiKeys, eq(apiKeys.id, subscriptions.keyId))
      .leftJoin(brokers, eq(brokers.name, subscriptions.broker))
      .where(sql`${subscriptions.id} in (select json_array_elements_text(${sql.placeholder("ids")}::text::json))`)
      .prepare("registry_delivery_targets"),
    apiKeyByHash: readDb
      .select()
      .from(apiKeys)
      .where(eq(apiKeys.secretHash, sql.placeholder("hash")))
      .prepare("registry_api_key_by_hash"),
  };
}

export class RegistryStore {
  readonly db: RegistryDb;
  private readonly keyring: Keyring;
  private readonly deadlineMs: number;
  private readonly readDb: RegistryDb;
  private readonly hot: ReturnType<typeof prepareHotQueries>;
  private readonly ledger: IdempotencyLedger;

  constructor(db: RegistryDb, opts: RegistryStoreOptions) {
    this.db = db;
    this.readDb = opts.readDb ?? db;
    this.hot = prepareHotQueries(this.readDb);
    this.keyring = opts.keyring;
    this.ledger = new IdempotencyLedger(idempotencyRecords, opts.keyring);
    this.deadlineMs = opts.deadlineMs ?? STORE_DEADLINE_MS;
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

  // ---- API keys ----

  createApiKey(name: string, chains: string[]): Promise<IssuedApiKey> {
    return this.run(async (db) => {
      const secret = generateApiKeySecret();
      const [row] = await db
        .insert(apiKeys)
        .values({ id: newId("key"), name, secretHash: hashApiKey(secret), chains })
        .returning();
      return { row: row!, secret };
    });
  }

  listApiKeys(): Promise<ApiKeyRow[]> {
    return this.run((db) => db.select().from(apiKeys).orderBy(asc(apiKeys.createdAt), asc(apiKeys.id)));
  }

  getApiKey(id: string): Promise<ApiKeyRow | undefined> {
    return this.run(async (db) => (await db.select().from(apiKeys).where(eq(apiKeys.id, id)))[0]);
  }

  /** The key whose hash matches, revoked or not; undefined for a malformed or unknown secret. */
  findApiKeyBySecret(secret: string): Promise<ApiKeyRow | undefined> {
    if (!API_KEY_PATTERN.test(secret)) return Promise.resolve(undefined);
    const hash = hashApiKey(secret);
    return this.run(async () => (await this.hot.apiKeyByHash.execute({ hash }))[0]);
  }

  /**
   * Marks the key revoked (keeps the first revocation time), with the watch index's outbox row in the same
   * transaction; undefined when the key does not exist.
   */
  revokeApiKey(id: string): Promise<Changed<ApiKeyRow> | undefined> {
    return this.write(async (tx) => {
      const [row] = await tx
        .update(apiKeys)
        .set({ revokedAt: sql`coalesce(${apiKeys.revokedAt}, now())` })
        .where(eq(apiKeys.id, id))
        .returning();
      return row && { row, ticket: await recordIndexChanges(tx, [{ kind: "key", keyId: id }]) };
    });
  }

  setApiKeyChains(id: string, chains: string[]): Promise<Changed<ApiKeyRow> | undefined> {
    return this.write(async (tx) => {
      const [row] = await tx.update(apiKeys).set({ chains }).where(eq(apiKeys.id, id)).returning();
      return row && { row, ticket: await recordIndexChanges(tx, [{ kind: "key", keyId: id }]) };
    });
  }

  // ---- subscriptions ----

  /** Inserts within `tx` (the idempotency transaction) and returns the row. */
  async insertSubscription(tx: RegistryExecutor, input: NewSubscription): Promise<SubscriptionRow> {
    const now = new Date();
    const id = newId("sub");
    const values = {
      id,
      keyId: input.keyId,
      destinationType: input.destinationType,
      url: input.url,
      broker: input.broker,
      exchange: input.exchange,
      routingKey: input.routingKey,
      subject: input.subject,
      events: input.events,
      status: input.status,
      description: input.description,
      match: input.match,
      secret: this.seal(input.secret, subscriptionSecretBinding(id)),
      createdAt: now,
      updatedAt: now,
    };
    // One INSERT with the columns named once and each value converted by its column (sql.param), and the row
    // answered from what was inserted plus the three columns left to their defaults: drizzle's insert builder with
    // RETURNING cost about a fifth of a create's CPU in the stack (bench api, POST /v1/subscriptions).
    const c = subscriptions;
    const columns = [c.id, c.keyId, c.destinationType, c.url, c.broker, c.exchange, c.routingKey, c.subject, c.events, c.status, c.description, c.match, c.secret, c.createdAt, c.updatedAt];
    await tx.execute(sql`insert into ${c} (${sql.join(columns.map((col) => sql.identifier(col.name)), sql`, `)}) values (${values.id}, ${values.keyId},
      ${values.destinationType}, ${values.url}, ${values.broker}, ${values.exchange}, ${values.routingKey}, ${values.subject},
      ${sql.param(values.events, c.events)}, ${values.status}, ${values.description}, ${sql.param(values.match, c.match)},
      ${values.secret}, ${sql.param(now, c.createdAt)}, ${sql.param(now, c.updatedAt)})`);
    return { ...values, previousSecret: null, previousSecretExpiresAt: null, addressCount: 0 };
  }

  /** The key's subscription, or undefined (another key's subscription is simply not there). */
  getSubscription(keyId: string, id: string): Promise<SubscriptionRow | undefined> {
    return this.run((db) => this.findSubscription(db, keyId, id));
  }

  async findSubscription(ex: RegistryExecutor, keyId: string, id: string, forUpdate = false): Promise<SubscriptionRow | undefined> {
    if (ex === this.db && !forUpdate) return (await this.hot.subscription.execute({ id, keyId }))[0];
    const q = ex
      .select()
      .from(subscriptions)
      .where(and(eq(subscriptions.id, id), eq(subscriptions.keyId, keyId)));
    const rows = forUpdate ? await q.for("update") : await q;
    return rows[0];
  }

  /** The key's subscription with its first `limit` addresses (oldest first) in one round trip. */
  getSubscriptionWithAddresses(
    keyId: string,
    id: string,
    limit: number,
  ): Promise<{ row: SubscriptionRow; items: AddressRef[]; hasMore: boolean } | undefined> {
    return this.run(async () => {
      const [found] = await this.hot.subscriptionWithAddresses.execute({ id, keyId, limit: limit + 1 });
      if (!found) return undefined;
      const tokens = found.addresses ? found.addresses.split(" ") : [];
      const count = tokens.length / 2;
      const items: AddressRef[] = [];
      for (let i = 0; i < Math.min(count, limit); i++) items.push({ chainId: tokens[2 * i]!, address: tokens[2 * i + 1]! });
      return { row: found.row, items, hasMore: count > limit };
    });
  }

  /** Newest first; `limit + 1` rows are read so the caller knows whether another page follows. */
  listSubscriptions(keyId: string, limit: number, after: SubscriptionCursor | undefined): Promise<SubscriptionRow[]> {
    return this.run(() =>
      after
        ? this.hot.pageAfter.execute({ keyId, afterT: new Date(after.t).toISOString(), afterId: after.id, limit: limit + 1 })
        : this.hot.firstPage.execute({ keyId, limit: limit + 1 }),
    );
  }

  /**
   * Replaces the mutable fields, with the watch index's outbox row (status, kinds, match) in the same transaction,
   * written under the row lock the UPDATE holds; undefined when the key has no such subscription.
   */
  updateSubscription(keyId: string, id: string, fields: SubscriptionFields): Promise<Changed<SubscriptionRow> | undefined> {
    return this.write(async (tx) => {
      const [row] = await tx
        .update(subscriptions)
        .set({ ...fields, updatedAt: new Date() })
        .where(and(eq(subscriptions.id, id), eq(subscriptions.keyId, keyId)))
        .returning();
      return row && { row, ticket: await recordIndexChanges(tx, [{ kind: "meta", subscriptionId: id }]) };
    });
  }

  /**
   * Deletes the subscription and its addresses in one transaction, with the watch index's outbox row; the deleted
   * row, or undefined when there was none.
   */
  deleteSubscription(keyId: string, id: string): Promise<Changed<SubscriptionRow> | undefined> {
    return this.write(async (tx) => {
      const [row] = await tx
        .delete(subscriptions)
        .where(and(eq(subscriptions.id, id), eq(subscriptions.keyId, keyId)))
        .returning();
      if (!row) return undefined;
      await tx.delete(subscriptionAddresses).where(eq(subscriptionAddresses.subscriptionId, id));
      return { row, ticket: await recordIndexChanges(tx, [{ kind: "drop", subscriptionId: id }]) };
    });
  }

  /**
   * Installs `secret` as the signing secret inside `tx`. The current one keeps signing until `graceMs` from now
   * (0: cut off at once); an older previous secret is dropped, so at most two sign at any time.
   */
  async rotateSecret(
    tx: RegistryExecutor,
    keyId: string,
    id: string,
    secret: string,
    graceMs: number,
  ): Promise<SubscriptionRow | undefined> {
    const current = await this.findSubscription(tx, keyId, id, true);
    if (!current) return undefined;
    const now = new Date();
    // A current secret that no longer decrypts cannot sign during a grace: kept, it would hold the subscription's
    // deliveries until the grace ended, so the rotation cuts it off at once.
    const grace = graceMs > 0 && this.tryOpen(current.secret, subscriptionSecretBinding(id)) !== undefined;
    const [row] = await tx
      .update(subscriptions)
      .set({
        secret: this.seal(secret, subscriptionSecretBinding(id)),
        previousSecret: grace ? current.secret : null,
        previousSecretExpiresAt: grace ? new Date(now.getTime() + graceMs) : null,
        updatedAt: now,
      })
      .where(eq(subscriptions.id, id))
      .returning();
    return row;
  }

  /**
   * What a delivery to the target needs in clear: its signing secrets, newest first (the previous one only while its
   * grace lasts), and its broker's URL; or the first of them that cannot be decrypted (a damaged row, or one sealed
   * under another APP_SECRET). Never throws: one unreadable row must not fail the others read with it.
   */
  deliveryCredentials(t: DeliveryTargetRow, now = Date.now()): DeliveryCredentials {
    const row = t.subscription;
    const secret = this.tryOpen(row.secret, subscriptionSecretBinding(row.id));
    if (secret === undefined) return { ok: false, unreadable: "secret" };
    const secrets = [secret];
    if (row.previousSecret && row.previousSecretExpiresAt && row.previousSecretExpiresAt.getTime() > now) {
      const previous = this.tryOpen(row.previousSecret, subscriptionSecretBinding(row.id));
      if (previous === undefined) return { ok: false, unreadable: "previous_secret" };
      secrets.push(previous);
    }
    let brokerUrl = "";
    if (t.broker) {
      const url = this.tryOpen(t.broker.url, brokerUrlBinding(t.broker.name));
      if (url === undefined) return { ok: false, unreadable: "broker_url" };
      brokerUrl = url;
    }
    return { ok: true, secrets, brokerUrl };
  }

  /** The plaintext, or undefined when `sealed` does not decrypt under this process's key. */
  private tryOpen(sealed: string, binding: string): string | undefined {
    try {
      return this.open(sealed, binding);
    } catch {
      return undefined;
    }
  }

  /** Up to `limit` addresses in order of addition, and whether more follow. */
  async inlineAddresses(ex: RegistryExecutor, subscriptionId: string, limit: number): Promise<{ items: AddressRef[]; hasMore: boolean }> {
    const rows = await ex
      .select({ chainId: subscriptionAddresses.chainId, address: subscriptionAddresses.address })
      .from(subscriptionAddresses)
      .where(eq(subscriptionAddresses.subscriptionId, subscriptionId))
      .orderBy(asc(subscriptionAddresses.seq))
      .limit(limit + 1);
    return { items: rows.slice(0, limit), hasMore: rows.length > limit };
  }

  deliveryTargets(ids: string[]): Promise<DeliveryTargetRow[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.run(() => this.hot.deliveryTargets.execute({ ids: JSON.stringify(ids) }));
  }

  // ---- brokers ----

  getBroker(name: string): Promise<BrokerRow | undefined> {
    return this.run(async (db) => (await db.select().from(brokers).where(eq(brokers.name, name)))[0]);
  }

  /** Every grant on the broker (registry/broker-grants.ts picks the ones that apply to a key). */
  brokerGrants(broker: string): Promise<BrokerGrantRow[]> {
    return this.run((db) => db.select().from(brokerGrants).where(eq(brokerGrants.broker, broker)));
  }

  /** Grants (or re-grants, updating defaultExchange) a prefix on a broker; false when the broker does not exist. */
  grantBroker(grant: { broker: string; keyId: string; prefix: string; defaultExchange: boolean }): Promise<boolean> {
    return this.run(async (db) => {
      if (!(await db.select({ name: brokers.name }).from(brokers).where(eq(brokers.name, grant.broker)))[0]) return false;
      await db
        .insert(brokerGrants)
        .values(grant)
        .onConflictDoUpdate({ target: [brokerGrants.broker, brokerGrants.keyId, brokerGrants.prefix], set: { defaultExchange: grant.defaultExchange } });
      return true;
    });
  }

  /** Revokes a key's grants on a broker (one prefix, or all of them); returns how many went. */
  revokeBrokerGrant(broker: string, keyId: string, prefix?: string): Promise<number> {
    return this.run(async (db) => {
      const where = [eq(brokerGrants.broker, broker), eq(brokerGrants.keyId, keyId)];
      if (prefix !== undefined) where.push(eq(brokerGrants.prefix, prefix));
      return (await db.delete(brokerGrants).where(and(...where)).returning({ prefix: brokerGrants.prefix })).length;
    });
  }

  /** Every grant, by broker, key and prefix (the CLI's list). */
  listBrokerGrants(broker?: string): Promise<BrokerGrantRow[]> {
    return this.run((db) =>
      db
        .select()
        .from(brokerGrants)
        .where(broker === undefined ? undefined : eq(brokerGrants.broker, broker))
        .orderBy(asc(brokerGrants.broker), asc(brokerGrants.keyId), asc(brokerGrants.prefix)),
    );
  }

  /** Registers a broker; false when the name is taken (nothing changes). */
  addBroker(name: string, type: string, url: string): Promise<boolean> {
    return this.run(async (db) => {
      const rows = await db
        .insert(brokers)
        .values({ name, type, url: this.seal(url, brokerUrlBinding(name)) })
        .onConflictDoNothing()
        .returning({ name: brokers.name });
      return rows.length > 0;
    });
  }

  listBrokers(): Promise<BrokerInfo[]> {
    return this.run(async (db) => {
      const rows = await db.select().from(brokers).orderBy(asc(brokers.name));
      return rows.map((r) => ({ name: r.name, type: r.type, maskedUrl: maskBrokerUrl(this.open(r.url, brokerUrlBinding(r.name))), createdAt: r.createdAt }));
    });
  }

  /**
   * Removes a broker unless a subscription uses it. The foreign key from subscriptions decides under concurrent
   * writes; the count only makes the refusal say how many.
   */
  removeBroker(name: string): Promise<{ removed: boolean; usedBy: number }> {
    return this.run((db) =>
      db.transaction(async (tx) => {
        const [used] = await tx
          .select({ n: sql<number>`count(*)::int` })
          .from(subscriptions)
          .where(eq(subscriptions.broker, name));
        if ((used?.n ?? 0) > 0) return { removed: false, usedBy: used!.n };
        const rows = await tx.delete(brokers).where(eq(brokers.name, name)).returning({ name: brokers.name });
        return { removed: rows.length > 0, usedBy: 0 };
      }),
    );
  }

  // ---- idempotency ----

  /**
   * Runs `effect` in one transaction with the idempotency record of (keyId, scope, idem.key), as docs/CONTRACT.md
   * "Idempotency" says (common/idempotency.ts): a concurrent holder of the same key → idempotency_in_flight; a
   * finished record with the same request hash → its stored response; with another hash → idempotency_conflict;
   * otherwise the effect and the record commit together (any error rolls both back). Without an idempotency key the
   * effect simply runs in a transaction. Either way it is a `write` (a 503 means nothing changed).
   */
  idempotent<Desc extends DescMessage>(
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest | undefined,
    effect: (ex: RegistryExecutor) => Promise<MessageShape<Desc>>,
  ): Promise<IdempotentOutcome<MessageShape<Desc>>> {
    // Even a single statement runs in a transaction: on its own it would commit whenever a frozen database resumed,
    // after the caller had been answered 503; inside one, the fence of `write` rolls it back instead.
    return this.write((tx) => this.ledger.once(tx, schema, keyId, scope, idem, effect));
  }

  /**
   * A finished record's outcome, read without a transaction: a replay can answer before any validation or DNS
   * lookup (the stored answer stays valid even if the destination's DNS changed since). undefined: none yet.
   */
  peekIdempotent<Desc extends DescMessage>(
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest | undefined,
  ): Promise<IdempotentOutcome<MessageShape<Desc>> | undefined> {
    if (!isKeyed(idem)) return Promise.resolve(undefined);
    return this.run((db) => this.ledger.find(db, schema, keyId, scope, idem));
  }

  /** Deletes expired idempotency records (their stored responses carry secrets); returns how many. */
  purgeExpiredIdempotency(): Promise<number> {
    return this.run((db) => this.ledger.purgeExpired(db), 30_000);
  }

  async close(): Promise<void> {
    if (this.readDb !== this.db) await this.readDb.$client.close();
    await this.db.$client.close();
  }
}
