// Brokers: the registered AMQP and NATS servers (their URLs sealed) and the grants that let a key publish to them.
import { and, asc, eq, sql } from "drizzle-orm";
import { maskBrokerUrl } from "../destination.ts";
import { brokerUrlBinding } from "../sealed-columns.ts";
import { brokerGrants, brokers, subscriptions, type BrokerGrantRow, type BrokerRow } from "../schema.ts";
import type { RegistryAccess } from "./connection.ts";
import type { BrokerInfo } from "./types.ts";

export class Brokers {
  constructor(private readonly s: RegistryAccess) {}

  getBroker(name: string): Promise<BrokerRow | undefined> {
    return this.s.run(async (db) => (await db.select().from(brokers).where(eq(brokers.name, name)))[0]);
  }

  /** Every grant on the broker (registry/broker-grants.ts picks the ones that apply to a key). */
  brokerGrants(broker: string): Promise<BrokerGrantRow[]> {
    return this.s.run((db) => db.select().from(brokerGrants).where(eq(brokerGrants.broker, broker)));
  }

  /** Grants (or re-grants, updating defaultExchange) a prefix on a broker; false when the broker does not exist. */
  grantBroker(grant: { broker: string; keyId: string; prefix: string; defaultExchange: boolean }): Promise<boolean> {
    return this.s.run(async (db) => {
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
    return this.s.run(async (db) => {
      const where = [eq(brokerGrants.broker, broker), eq(brokerGrants.keyId, keyId)];
      if (prefix !== undefined) where.push(eq(brokerGrants.prefix, prefix));
      return (await db.delete(brokerGrants).where(and(...where)).returning({ prefix: brokerGrants.prefix })).length;
    });
  }

  /** Every grant, by broker, key and prefix (the CLI's list). */
  listBrokerGrants(broker?: string): Promise<BrokerGrantRow[]> {
    return this.s.run((db) =>
      db
        .select()
        .from(brokerGrants)
        .where(broker === undefined ? undefined : eq(brokerGrants.broker, broker))
        .orderBy(asc(brokerGrants.broker), asc(brokerGrants.keyId), asc(brokerGrants.prefix)),
    );
  }

  /** Registers a broker; false when the name is taken (nothing changes). */
  addBroker(name: string, type: string, url: string): Promise<boolean> {
    return this.s.run(async (db) => {
      const rows = await db
        .insert(brokers)
        .values({ name, type, url: this.s.seal(url, brokerUrlBinding(name)) })
        .onConflictDoNothing()
        .returning({ name: brokers.name });
      return rows.length > 0;
    });
  }

  listBrokers(): Promise<BrokerInfo[]> {
    return this.s.run(async (db) => {
      const rows = await db.select().from(brokers).orderBy(asc(brokers.name));
      return rows.map((r) => ({ name: r.name, type: r.type, maskedUrl: maskBrokerUrl(this.s.open(r.url, brokerUrlBinding(r.name))), createdAt: r.createdAt }));
    });
  }

  /**
   * Removes a broker unless a subscription uses it. The foreign key from subscriptions decides under concurrent
   * writes; the count only makes the refusal say how many.
   */
  removeBroker(name: string): Promise<{ removed: boolean; usedBy: number }> {
    return this.s.run((db) =>
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
}
