// Idempotency of the deliverer's effects (docs/CONTRACT.md "Idempotency"): test and retry, each with its record.
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { withDatabase, writeTransaction } from "../../common/db.ts";
import { IdempotencyLedger, type IdempotentOutcome } from "../../common/idempotency.ts";
import type { Keyring } from "../../common/keyring.ts";
import type { IdempotencyRequest } from "../../gen/webhooks/common/v1/error_pb.ts";
import { deliveryIdempotency } from "../schema.ts";
import type { DelivererDb, DelivererTx } from "./connection.ts";

export class DelivererIdempotency {
  private readonly ledger: IdempotencyLedger;

  constructor(
    private readonly db: DelivererDb,
    keyring: Keyring,
  ) {
    this.ledger = new IdempotencyLedger(deliveryIdempotency, keyring);
  }

  /** The effect and its idempotency record in one write transaction under the commit fence (a 503 changed nothing). */
  idempotent<Desc extends DescMessage>(
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest | undefined,
    effect: (tx: DelivererTx) => Promise<MessageShape<Desc>>,
  ): Promise<IdempotentOutcome<MessageShape<Desc>>> {
    return writeTransaction(this.db, (tx) => this.ledger.once(tx, schema, keyId, scope, idem, effect));
  }

  /** A finished record's outcome (replay), read outside any effect: for effects too long for one transaction. */
  findIdempotent<Desc extends DescMessage>(
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest,
  ): Promise<IdempotentOutcome<MessageShape<Desc>> | undefined> {
    return withDatabase(() => this.ledger.find(this.db, schema, keyId, scope, idem));
  }

  /** Records the outcome of an effect that ran in batches; a record written meanwhile wins and is returned. */
  recordIdempotent<Desc extends DescMessage>(
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest,
    message: MessageShape<Desc>,
  ): Promise<IdempotentOutcome<MessageShape<Desc>>> {
    return writeTransaction(this.db, (tx) => this.ledger.once(tx, schema, keyId, scope, idem, async () => message));
  }

  purgeExpiredIdempotency(): Promise<number> {
    return this.ledger.purgeExpired(this.db);
  }
}
