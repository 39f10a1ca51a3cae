// What the DeliveryService handlers (service.ts, operations.ts) are given: a leaf, so neither imports the other for it.
import type { ServiceImpl } from "@connectrpc/connect";
import type { TokenKeys } from "../common/keyring.ts";
import type { DeliveryService } from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import type { DelivererStore } from "./db/store.ts";
import type { Schedule } from "./schedule.ts";
import type { TargetCache } from "./targets.ts";

export interface DeliveryServiceDeps {
  store: DelivererStore;
  schedule: Schedule;
  targets: TargetCache;
  retrySchedule: number[];
  /** Sign (the first) and verify (any) page tokens: APP_SECRET's keyring. */
  tokenKeys: TokenKeys;
  /** Tells the local worker that something is due now. */
  wake: () => void;
  /** How long a reservation outlives a crash between the PostgreSQL commit and the schedule update. */
  reserveMs: number;
  /** Wakes the background purge of deleted subscriptions' events (deliverer/jobs/event-purge.ts). */
  purge?: () => void;
  /** StreamEvents (deliverer/stream.ts). */
  streamEvents: ServiceImpl<typeof DeliveryService>["streamEvents"];
}
