// Subscriptions: created (the secret sealed), read (the hot reads prepared once on the read pool), listed, updated,
// deleted, their secret rotated, and the deliverer's targets read; a change the watch index must follow leaves its
// outbox row in the same transaction.
import { and, asc, desc, eq, sql } from "drizzle-orm";
import { newId } from "../../common/ids.ts";
import { tryOpen } from "../delivery-credentials.ts";
import { subscriptionSecretBinding } from "../sealed-columns.ts";
import { apiKeys, brokers, subscriptionAddresses, subscriptions, type SubscriptionRow } from "../schema.ts";
import { recordIndexChanges } from "../watch-index/outbox.ts";
import { cancelSubscriptionBackfills } from "./backfills.ts";
import type { RegistryAccess, RegistryDb, RegistryExecutor } from "./connection.ts";
import type { AddressRef, Changed, DeliveryTargetRow, NewSubscription, SubscriptionCursor, SubscriptionFields } from "./types.ts";

/**
 * The hot reads, built once: drizzle assembling the SQL text on every call cost about half the registry's CPU on
 * GET, and about a third of the whole request's on a list page of 50 (bench api). Prepared on the pool, so they
 * serve callers outside a transaction only.
 */
function prepareSubscriptionReads(readDb: RegistryDb) {
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
    // number of them fits one prepared statement, prepared once (POST …/test asks for its target on every call).
    deliveryTargets: readDb
      .select({ subscription: subscriptions, key: apiKeys, broker: brokers })
      .from(subscriptions)
      .innerJoin(apiKeys, eq(apiKeys.id, subscriptions.keyId))
      .leftJoin(brokers, eq(brokers.name, subscriptions.broker))
      .where(sql`${subscriptions.id} in (select json_array_elements_text(${sql.placeholder("ids")}::text::json))`)
      .prepare("registry_delivery_targets"),
  };
}

export class Subscriptions {
  private readonly reads: ReturnType<typeof prepareSubscriptionReads>;

  constructor(private readonly s: RegistryAccess) {
    this.reads = prepareSubscriptionReads(s.readDb);
  }

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
      secret: this.s.seal(input.secret, subscriptionSecretBinding(id)),
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
    return this.s.run((db) => this.findSubscription(db, keyId, id));
  }

  async findSubscription(ex: RegistryExecutor, keyId: string, id: string, forUpdate = false): Promise<SubscriptionRow | undefined> {
    if (ex === this.s.db && !forUpdate) return (await this.reads.subscription.execute({ id, keyId }))[0];
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
    return this.s.run(async () => {
      const [found] = await this.reads.subscriptionWithAddresses.execute({ id, keyId, limit: limit + 1 });
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
    return this.s.run(() =>
      after
        ? this.reads.pageAfter.execute({ keyId, afterT: new Date(after.t).toISOString(), afterId: after.id, limit: limit + 1 })
        : this.reads.firstPage.execute({ keyId, limit: limit + 1 }),
    );
  }

  /**
   * Replaces the mutable fields, with the watch index's outbox row (status, kinds, match) in the same transaction,
   * written under the row lock the UPDATE holds; undefined when the key has no such subscription.
   */
  updateSubscription(keyId: string, id: string, fields: SubscriptionFields): Promise<Changed<SubscriptionRow> | undefined> {
    return this.s.write(async (tx) => {
      const [row] = await tx
        .update(subscriptions)
        .set({ ...fields, updatedAt: new Date() })
        .where(and(eq(subscriptions.id, id), eq(subscriptions.keyId, keyId)))
        .returning();
      if (row && fields.status === "disabled") await cancelSubscriptionBackfills(tx, id, "subscription disabled");
      return row && { row, ticket: await recordIndexChanges(tx, [{ kind: "meta", subscriptionId: id }]) };
    });
  }

  /**
   * Deletes the subscription and its addresses in one transaction, with the watch index's outbox row; the deleted
   * row, or undefined when there was none.
   */
  deleteSubscription(keyId: string, id: string): Promise<Changed<SubscriptionRow> | undefined> {
    return this.s.write(async (tx) => {
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
    const grace = graceMs > 0 && tryOpen(this.s.open.bind(this.s), current.secret, subscriptionSecretBinding(id)) !== undefined;
    const [row] = await tx
      .update(subscriptions)
      .set({
        secret: this.s.seal(secret, subscriptionSecretBinding(id)),
        previousSecret: grace ? current.secret : null,
        previousSecretExpiresAt: grace ? new Date(now.getTime() + graceMs) : null,
        updatedAt: now,
      })
      .where(eq(subscriptions.id, id))
      .returning();
    return row;
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
    return this.s.run(() => this.reads.deliveryTargets.execute({ ids: JSON.stringify(ids) }));
  }
}
