// PUT /v1/subscriptions/:id: replace destination, events, status, description and match conditions.
import { Elysia } from "elysia";
import { WRITE_RPC_OPTIONS, rpc } from "../../deps.ts";
import { BODY, URL_POLICY } from "../../docs-errors.ts";
import { CREATE_BODY, UPDATED, exampleSubscription } from "../../docs-examples.ts";
import { renderSubscription } from "../../render.ts";
import { SubscriptionIdParams, SubscriptionSchema, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { SubscriptionBody, TAGS, present, subscriptionFields, subscriptionRef } from "./shared.ts";

const PATH = "/v1/subscriptions/:id";

export const replaceSubscription: Operation = {
  key: operationKey("put", PATH),
  errors: [...BODY, ...URL_POLICY, "not_found"],
  examples: {
    request: { ...CREATE_BODY, status: "enabled" },
    response: { "200": exampleSubscription({ updated: UPDATED }) },
  },
  route: (deps) =>
    new Elysia({ name: replaceSubscription.key }).put(
      PATH,
      async ({ params, body, request }) => {
        const { keyId, id } = subscriptionRef(request, params.id);
        const res = await rpc(() =>
          deps.subscriptions.updateSubscription({ keyId, id, ...subscriptionFields(body, "enabled") }, WRITE_RPC_OPTIONS),
        );
        return renderSubscription(present(res.subscription), "summary");
      },
      {
        params: SubscriptionIdParams,
        body: SubscriptionBody,
        response: { 200: SubscriptionSchema, ...errorResponses(400, 401, 404, 413, 415, 429, 503) },
        detail: {
          summary: "Replace a subscription's destination, events, status, description and match conditions",
          description:
            "Omitted status becomes enabled, omitted description becomes empty and omitted match becomes the default. Address filters and the secret are untouched.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    ),
};
