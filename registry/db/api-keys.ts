// API keys: issued (minted in registry/api-keys/mint.ts, only the hash stored), listed, resolved by secret, revoked,
// and their chains set; a change the watch index must follow leaves its outbox row in the same transaction.
import { asc, eq, sql } from "drizzle-orm";
import { newId } from "../../common/ids.ts";
import type { QuotaOverrides } from "../../common/quotas.ts";
import { overrideColumns } from "../quotas.ts";
import { lookupHash, mintApiKey } from "../api-keys/mint.ts";
import { apiKeys, type ApiKeyRow } from "../schema.ts";
import { recordIndexChanges } from "../watch-index/outbox.ts";
import type { RegistryAccess, RegistryDb } from "./connection.ts";
import type { Changed } from "./types.ts";

export interface IssuedApiKey {
  row: ApiKeyRow;
  /** "whk_" + 43 base64url characters; shown once, only its SHA-256 is kept. */
  secret: string;
}

/** The hot read of every authenticated request, prepared once on the read pool (see db/subscriptions.ts). */
function prepareKeyByHash(readDb: RegistryDb) {
  return readDb.select().from(apiKeys).where(eq(apiKeys.secretHash, sql.placeholder("hash"))).prepare("registry_api_key_by_hash");
}

export class ApiKeys {
  private readonly byHash: ReturnType<typeof prepareKeyByHash>;

  constructor(private readonly s: RegistryAccess) {
    this.byHash = prepareKeyByHash(s.readDb);
  }

  createApiKey(name: string, chains: string[]): Promise<IssuedApiKey> {
    return this.s.run(async (db) => {
      const { secret, hash } = mintApiKey();
      const [row] = await db
        .insert(apiKeys)
        .values({ id: newId("key"), name, secretHash: hash, chains })
        .returning();
      return { row: row!, secret };
    });
  }

  listApiKeys(): Promise<ApiKeyRow[]> {
    return this.s.run((db) => db.select().from(apiKeys).orderBy(asc(apiKeys.createdAt), asc(apiKeys.id)));
  }

  getApiKey(id: string): Promise<ApiKeyRow | undefined> {
    return this.s.run(async (db) => (await db.select().from(apiKeys).where(eq(apiKeys.id, id)))[0]);
  }

  /** Replaces the key's quota overrides (registry/quotas.ts); undefined when the key does not exist. */
  setApiKeyQuotas(id: string, overrides: QuotaOverrides): Promise<ApiKeyRow | undefined> {
    return this.s.run(async (db) => (await db.update(apiKeys).set(overrideColumns(overrides)).where(eq(apiKeys.id, id)).returning())[0]);
  }

  /** The key whose hash matches, revoked or not; undefined for a malformed or unknown secret. */
  findApiKeyBySecret(secret: string): Promise<ApiKeyRow | undefined> {
    const hash = lookupHash(secret);
    if (hash === undefined) return Promise.resolve(undefined);
    return this.s.run(async () => (await this.byHash.execute({ hash }))[0]);
  }

  /**
   * Marks the key revoked (keeps the first revocation time), with the watch index's outbox row in the same
   * transaction; undefined when the key does not exist.
   */
  revokeApiKey(id: string): Promise<Changed<ApiKeyRow> | undefined> {
    return this.s.write(async (tx) => {
      const [row] = await tx
        .update(apiKeys)
        .set({ revokedAt: sql`coalesce(${apiKeys.revokedAt}, now())` })
        .where(eq(apiKeys.id, id))
        .returning();
      return row && { row, ticket: await recordIndexChanges(tx, [{ kind: "key", keyId: id }]) };
    });
  }

  setApiKeyChains(id: string, chains: string[]): Promise<Changed<ApiKeyRow> | undefined> {
    return this.s.write(async (tx) => {
      const [row] = await tx.update(apiKeys).set({ chains }).where(eq(apiKeys.id, id)).returning();
      return row && { row, ticket: await recordIndexChanges(tx, [{ kind: "key", keyId: id }]) };
    });
  }
}
