// POST /v1/subscriptions: create a subscription; the answer carries its signing secret.
import { Elysia } from "elysia";
import { principalOf } from "../../context.ts";
import { WRITE_RPC_OPTIONS, rpc } from "../../deps.ts";
import { BODY, IDEMPOTENT, URL_POLICY } from "../../docs-errors.ts";
import { CREATE_BODY, exampleSubscription } from "../../docs-examples.ts";
import { idempotencyFor, replayHeaders } from "../../idempotency.ts";
import { renderSubscription, type SubscriptionJson } from "../../render.ts";
import { IdempotencyHeaders, SubscriptionSchema, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { SubscriptionBody, TAGS, present, subscriptionFields } from "./shared.ts";

const PATH = "/v1/subscriptions";

export const createSubscription: Operation = {
  key: operationKey("post", PATH),
  errors: [...BODY, ...URL_POLICY, ...IDEMPOTENT, "quota_exceeded"],
  examples: { request: CREATE_BODY, response: { "201": exampleSubscription({ secret: true, hasMore: false }) } },
  route: (deps) =>
    new Elysia({ name: createSubscription.key }).post(
      PATH,
      async ({ body, request, set }): Promise<SubscriptionJson> => {
        const { keyId } = principalOf(request);
        const idempotency = idempotencyFor(request, PATH);
        const res = await rpc(() =>
          deps.subscriptions.createSubscription({ keyId, ...subscriptionFields(body, ""), idempotency }, WRITE_RPC_OPTIONS),
        );
        set.status = 201;
        Object.assign(set.headers, replayHeaders(res.idempotency));
        return renderSubscription(present(res.subscription), "created", true);
      },
      {
        body: SubscriptionBody,
        headers: IdempotencyHeaders,
        response: { 201: SubscriptionSchema, ...errorResponses(400, 401, 403, 409, 413, 415, 429, 503) },
        detail: {
          summary: "Create a subscription",
          description: "Returns the subscription with its signing secret (shown here and after rotation only).",
          tags: TAGS,
          security: SECURITY,
        },
      },
    ),
};
