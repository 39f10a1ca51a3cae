// The shapes the registry's persistence reads and writes, beside the tables' own rows (schema.ts): a leaf, so callers
// can name them without importing any statement.
import type { MatchConditions } from "../../common/match-conditions.ts";
import type { OutboxTicket } from "../watch-index/outbox.ts";
import type { ApiKeyRow, BrokerRow, SubscriptionRow } from "../schema.ts";


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
