// DELETE /v1/subscriptions/:id: the subscription goes, and its pending deliveries and events with it.
import { createClient } from "@connectrpc/connect";
import { Elysia, t } from "elysia";
import { log } from "../../../common/logger.ts";
import { DeliveryService } from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { RPC_OPTIONS, WRITE_RPC_OPTIONS, rpc, type GatewayDeps } from "../../deps.ts";
import { SubscriptionIdParams, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { TAGS, subscriptionRef } from "./shared.ts";

const PATH = "/v1/subscriptions/:id";

/**
 * After the registry deleted a subscription, its pending deliveries stop and its events go (docs/CONTRACT.md). If the
 * deliverer cannot be reached the subscription is gone all the same: the deliverer cancels the pending events
 * itself when it finds the subscription missing, and the events' URLs are 404 with their subscription.
 */
async function deleteEvents(deps: GatewayDeps, subscriptionId: string): Promise<void> {
  if (!deps.deliverer) return;
  try {
    await createClient(DeliveryService, deps.deliverer).deleteSubscriptionEvents({ subscriptionId }, RPC_OPTIONS);
  } catch (err) {
    log.warn("deleting a deleted subscription's events failed; the deliverer will cancel them", { subscriptionId, err });
  }
}

export const deleteSubscription: Operation = {
  key: operationKey("delete", PATH),
  errors: ["not_found"],
  route: (deps) =>
    new Elysia({ name: deleteSubscription.key }).delete(
      PATH,
      async ({ params, request, set }) => {
        const { keyId, id } = subscriptionRef(request, params.id);
        await rpc(() => deps.subscriptions.deleteSubscription({ keyId, id }, WRITE_RPC_OPTIONS));
        await deleteEvents(deps, id);
        set.status = 204;
        return new Response(null, { status: 204 });
      },
      {
        params: SubscriptionIdParams,
        response: { 204: t.Void({ description: "Deleted; no body." }), ...errorResponses(401, 404, 429, 503) },
        detail: {
          summary: "Delete a subscription",
          description: "Its addresses stop matching at once, pending deliveries are cancelled and its events are removed.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    ),
};
