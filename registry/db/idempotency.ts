// Idempotency of the registry's writes (docs/CONTRACT.md "Idempotency", common/idempotency.ts).
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { IdempotencyLedger, isKeyed, type IdempotentOutcome } from "../../common/idempotency.ts";
import type { Keyring } from "../../common/keyring.ts";
import type { IdempotencyRequest } from "../../gen/webhooks/common/v1/error_pb.ts";
import { idempotencyRecords } from "../schema.ts";
import type { RegistryAccess, RegistryExecutor } from "./connection.ts";

export class RegistryIdempotency {
  private readonly ledger: IdempotencyLedger;

  constructor(
    private readonly s: RegistryAccess,
    keyring: Keyring,
  ) {
    this.ledger = new IdempotencyLedger(idempotencyRecords, keyring);
  }

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
    return this.s.write((tx) => this.ledger.once(tx, schema, keyId, scope, idem, effect));
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
    return this.s.run((db) => this.ledger.find(db, schema, keyId, scope, idem));
  }

  /** Deletes expired idempotency records (their stored responses carry secrets); returns how many. */
  purgeExpiredIdempotency(): Promise<number> {
    return this.s.run((db) => this.ledger.purgeExpired(db), 30_000);
  }
}
