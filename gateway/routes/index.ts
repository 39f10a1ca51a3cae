// Every operation of the public /v1 API, in the order the router and the OpenAPI document list them.
import { Elysia, type AnyElysia } from "elysia";
import type { GatewayDeps } from "../deps.ts";
import { cancelBackfill } from "./backfills/cancel.ts";
import { createBackfill } from "./backfills/create.ts";
import { getBackfill } from "./backfills/get.ts";
import { listBackfills } from "./backfills/list.ts";
import { listAddresses } from "./addresses/list.ts";
import { patchAddresses } from "./addresses/patch.ts";
import { replaceAddresses } from "./addresses/replace.ts";
import { listAttempts } from "./events/attempts.ts";
import { getEvent } from "./events/get.ts";
import { subscriptionHealth } from "./events/health.ts";
import { listEvents } from "./events/list.ts";
import { recoverEvents } from "./events/recover.ts";
import { retryEvent } from "./events/retry.ts";
import { searchEvents } from "./events/search.ts";
import { sendTestEvent } from "./events/test.ts";
import type { Operation } from "./operation.ts";
import { createSubscription } from "./subscriptions/create.ts";
import { deleteSubscription } from "./subscriptions/delete.ts";
import { getSubscription } from "./subscriptions/get.ts";
import { listSubscriptions } from "./subscriptions/list.ts";
import { replaceSubscription } from "./subscriptions/replace.ts";
import { rotateSecret } from "./subscriptions/rotate-secret.ts";

export const OPERATIONS: readonly Operation[] = [
  createSubscription,
  listSubscriptions,
  getSubscription,
  replaceSubscription,
  deleteSubscription,
  rotateSecret,
  patchAddresses,
  replaceAddresses,
  listAddresses,
  sendTestEvent,
  listEvents,
  getEvent,
  retryEvent,
  listAttempts,
  recoverEvents,
  searchEvents,
  subscriptionHealth,
  createBackfill,
  listBackfills,
  getBackfill,
  cancelBackfill,
];

const BY_KEY = new Map(OPERATIONS.map((op) => [op.key, op]));

/** The operation of a document key ("post /v1/subscriptions"), for the OpenAPI document. */
export function operationOf(key: string): Operation | undefined {
  return BY_KEY.get(key);
}

/** Every operation's route, as one plugin. */
export function apiRoutes(deps: GatewayDeps): AnyElysia {
  const routes: AnyElysia = new Elysia({ name: "routes" });
  for (const op of OPERATIONS) routes.use(op.route(deps));
  return routes;
}
