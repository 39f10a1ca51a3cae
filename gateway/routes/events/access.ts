// The deliverer's client and the ownership check every subscription-scoped event operation starts with: the gateway
// asks the registry whether the key owns the subscription, then the deliverer, which owns events.
import { createClient, type Client } from "@connectrpc/connect";
import { serviceUnavailable } from "../../../common/contract/index.ts";
import { DeliveryService } from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { RPC_OPTIONS, rpc, type GatewayDeps } from "../../deps.ts";
import { subscriptionRef } from "../subscriptions/shared.ts";

export function deliveryAccess(deps: GatewayDeps) {
  let client: Client<typeof DeliveryService> | undefined;
  const delivery = (): Client<typeof DeliveryService> => {
    if (!deps.deliverer) throw serviceUnavailable("Event delivery is not available right now.");
    return (client ??= createClient(DeliveryService, deps.deliverer));
  };

  /** The key owns the subscription (else not_found, as for any foreign resource). */
  async function owned(request: Request, rawId: string): Promise<{ keyId: string; subscriptionId: string }> {
    const { keyId, id } = subscriptionRef(request, rawId);
    await rpc(() => deps.subscriptions.getSubscription({ keyId, id }, RPC_OPTIONS));
    return { keyId, subscriptionId: id };
  }
  return { delivery, owned };
}
