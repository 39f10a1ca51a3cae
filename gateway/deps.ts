// What every route plugin of the gateway is built with. Route files create the Connect clients they need from
// these transports (the registry's, and the deliverer's for the event routes).
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import type { Config } from "../common/config.ts";
import { REQUEST_BUDGET_MS, RPC_DEADLINE_MS, writeRpcDeadline } from "../common/deadlines.ts";
import { fromRpcError } from "../common/rpc-errors.ts";
import { SubscriptionService } from "../gen/webhooks/registry/v1/registry_pb.ts";

export interface GatewayDeps {
  config: Config;
  registry: Transport;
  /** Undefined until the deliverer is wired (its event routes need it). */
  deliverer: Transport | undefined;
  subscriptions: Client<typeof SubscriptionService>;
}

export function createDeps(config: Config, registry: Transport, deliverer: Transport | undefined): GatewayDeps {
  return { config, registry, deliverer, subscriptions: createClient(SubscriptionService, registry) };
}

/** Deadline of one RPC from the gateway (common/deadlines.ts): a dependency that hangs still gives 503 in time. */
export const RPC_OPTIONS = { timeoutMs: RPC_DEADLINE_MS } as const;

/**
 * Deadline of a write (subscription create, replace, delete, rotate; test event; retry). The service answers 503 by
 * its store deadline while nothing can commit; once a COMMIT is in flight it waits for the outcome, and so does the
 * gateway, so a write that landed is never answered 503.
 */
export const WRITE_RPC_OPTIONS = { timeoutMs: writeRpcDeadline(REQUEST_BUDGET_MS) } as const;

/** Runs an RPC and turns its failure into the public ApiError (ErrorInfo carried, or 503/500). */
export async function rpc<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw fromRpcError(err);
  }
}
