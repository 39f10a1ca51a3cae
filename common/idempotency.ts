// Idempotency records (docs/CONTRACT.md "Idempotency"), one mechanism for every service that owns an effect: the record
// is taken and written inside the effect's own transaction, so a crash cannot leave one without the other.
import { fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { and, eq, getTableName, lt, sql } from "drizzle-orm";
import { index, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";
import type { IdempotencyRequest } from "../gen/webhooks/common/v1/error_pb.ts";
import { ApiError } from "./contract/index.ts";
import { rowBinding, type Keyring } from "./keyring.ts";
import type { Executor } from "./pg-executor.ts";
import type { SealedColumn } from "./reseal.ts";

const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;

/** The records table; each owning service has its own (its own name, in its own migrations). */
export function idempotencyTable(name: string, expiresIndexName: string) {
  const ms = (column: string) => timestamp(column, { precision: 3, withTimezone: true, mode: "date" });
  return pgTable(
    name,
    {
      keyId: text("key_id").notNull(),
      // Method and path, e.g. "POST /v1/subscriptions".
      scope: text("scope").notNull(),
      idemKey: text("idem_key").notNull(),
      requestHash: text("request_hash").notNull(),
      requestId: text("request_id").notNull(),
      // The response message's protobuf bytes (base64), encrypted: create and rotate responses carry a secret.
      response: text("response").notNull(),
      createdAt: ms("created_at").notNull().defaultNow(),
      expiresAt: ms("expires_at").notNull(),
    },
    (t) => [primaryKey({ columns: [t.keyId, t.scope, t.idemKey] }), index(expiresIndexName).on(t.expiresAt)],
  );
}

export type IdempotencyTable = ReturnType<typeof idempotencyTable>;

/** A stored response is bound to its record (table, key, scope, Idempotency-Key): it replays nowhere else. */
function responseBinding(tableName: string, keyId: string, scope: string, idemKey: string): string {
  return rowBinding(`${tableName}.response`, keyId, scope, idemKey);
}

/** The table's sealed responses, for `bun run secrets rotate` (common/reseal.ts). */
export function idempotencySealedColumn(table: IdempotencyTable): SealedColumn {
  const name = getTableName(table);
  return {
    table: name,
    column: table.response.name,
    key: [table.keyId.name, table.scope.name, table.idemKey.name],
    binding: ([keyId, scope, idemKey]) => responseBinding(name, keyId!, scope!, idemKey!),
  };
}

/** A stored response returned again (replayedFrom: the original request id), or a fresh one. */
export interface IdempotentOutcome<T> {
  message: T;
  replayedFrom?: string;
}

export function isKeyed(idem: IdempotencyRequest | undefined): idem is IdempotencyRequest {
  return idem !== undefined && idem.key !== "";
}

export class IdempotencyLedger {
  constructor(
    private readonly table: IdempotencyTable,
    private readonly keyring: Keyring,
  ) {}

  private binding(keyId: string, scope: string, idemKey: string): string {
    return responseBinding(getTableName(this.table), keyId, scope, idemKey);
  }

  /**
   * Inside the effect's transaction: takes the key's transaction lock (held elsewhere → idempotency_in_flight), then
   * returns the stored outcome of a finished request (another body → idempotency_conflict), or undefined when the
   * effect should run.
   */
  async claim<Desc extends DescMessage>(
    tx: Executor,
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest,
  ): Promise<IdempotentOutcome<MessageShape<Desc>> | undefined> {
    const lockKey = `${keyId}\n${scope}\n${idem.key}`;
    const [lock] = (await tx.execute(
      sql`select pg_try_advisory_xact_lock(hashtextextended(${lockKey}, 0)) as ok`,
    )) as unknown as { ok: boolean }[];
    if (!lock?.ok) {
      throw new ApiError("idempotency_in_flight", "A request with this Idempotency-Key is still being processed; retry shortly.");
    }
    return this.find(tx, schema, keyId, scope, idem);
  }

  /**
   * The idempotent effect, inside its transaction (docs/CONTRACT.md "Idempotency"): a concurrent holder of the same
   * key → idempotency_in_flight; a finished record with the same request hash → its stored response; with another
   * hash → idempotency_conflict; otherwise the effect runs and its record is written in the same transaction, so both
   * commit or neither does. Without an idempotency key the effect simply runs.
   */
  async once<Desc extends DescMessage, Tx extends Executor>(
    tx: Tx,
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest | undefined,
    effect: (tx: Tx) => Promise<MessageShape<Desc>>,
  ): Promise<IdempotentOutcome<MessageShape<Desc>>> {
    if (!isKeyed(idem)) return { message: await effect(tx) };
    const stored = await this.claim(tx, schema, keyId, scope, idem);
    if (stored) return stored;
    const message = await effect(tx);
    await this.record(tx, schema, keyId, scope, idem, message);
    return { message };
  }

  /** A finished record's outcome, or undefined; read without taking the lock (a replay may answer early). */
  async find<Desc extends DescMessage>(
    ex: Executor,
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest,
  ): Promise<IdempotentOutcome<MessageShape<Desc>> | undefined> {
    const t = this.table;
    const [stored] = await ex
      .select()
      .from(t)
      .where(and(eq(t.keyId, keyId), eq(t.scope, scope), eq(t.idemKey, idem.key), sql`${t.expiresAt} > now()`));
    if (!stored) return undefined;
    if (stored.requestHash !== idem.requestHash) {
      throw new ApiError(
        "idempotency_conflict",
        "This Idempotency-Key was already used with a different request; use a new key for a new request.",
      );
    }
    const bytes = Buffer.from(this.keyring.open(stored.response, this.binding(keyId, scope, idem.key)), "base64");
    return { message: fromBinary(schema, bytes), replayedFrom: stored.requestId };
  }

  /** Writes the record of a finished effect in the same transaction; an expired record not purged yet is replaced. */
  async record<Desc extends DescMessage>(
    tx: Executor,
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest,
    message: MessageShape<Desc>,
  ): Promise<void> {
    const now = new Date();
    const record = {
      requestHash: idem.requestHash,
      requestId: idem.requestId,
      response: this.keyring.seal(Buffer.from(toBinary(schema, message)).toString("base64"), this.binding(keyId, scope, idem.key)),
      createdAt: now,
      expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
    };
    const t = this.table;
    await tx
      .insert(t)
      .values({ keyId, scope, idemKey: idem.key, ...record })
      .onConflictDoUpdate({ target: [t.keyId, t.scope, t.idemKey], set: record });
  }

  /** Deletes expired records (their stored responses may carry secrets); returns how many. */
  async purgeExpired(ex: Executor): Promise<number> {
    const rows = await ex.delete(this.table).where(lt(this.table.expiresAt, sql`now()`)).returning({ k: this.table.idemKey });
    return rows.length;
  }
}
