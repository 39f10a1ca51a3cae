// GET /v1/subscriptions/:id: one subscription with its first addresses inlined.
import { Elysia } from "elysia";
import { INLINE_ADDRESSES } from "../../../common/contract/index.ts";
import { RPC_OPTIONS, rpc } from "../../deps.ts";
import { WALLET, exampleSubscription } from "../../docs-examples.ts";
import { renderSubscription } from "../../render.ts";
import { SubscriptionIdParams, SubscriptionSchema, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { TAGS, present, subscriptionRef } from "./shared.ts";

const PATH = "/v1/subscriptions/:id";

export const getSubscription: Operation = {
  key: operationKey("get", PATH),
  errors: ["not_found"],
  examples: { response: { "200": exampleSubscription({ addresses: [WALLET], hasMore: false }) } },
  route: (deps) =>
    new Elysia({ name: getSubscription.key }).get(
      PATH,
      async ({ params, request }) => {
        const { keyId, id } = subscriptionRef(request, params.id);
        const res = await rpc(() => deps.subscriptions.getSubscription({ keyId, id }, RPC_OPTIONS));
        return renderSubscription(present(res.subscription), "detailed");
      },
      {
        params: SubscriptionIdParams,
        response: { 200: SubscriptionSchema, ...errorResponses(401, 404, 429, 503) },
        detail: { summary: `Get a subscription with up to ${INLINE_ADDRESSES} inlined addresses`, tags: TAGS, security: SECURITY },
      },
    ),
};
