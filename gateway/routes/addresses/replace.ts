// PUT /v1/subscriptions/:id/filters/addresses: replace the whole list, all or nothing.
import { Elysia, t } from "elysia";
import { INLINE_ADDRESSES, invalidRequest } from "../../../common/contract/index.ts";
import { rpc } from "../../deps.ts";
import { BODY } from "../../docs-errors.ts";
import { OTHER, UPDATED, WALLET, exampleSubscription } from "../../docs-examples.ts";
import { renderSubscription } from "../../render.ts";
import { SubscriptionIdParams, SubscriptionSchema, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { present, subscriptionRef } from "../subscriptions/shared.ts";
import { AddressEntryInput, CHANGE_OPTIONS, PATH, TAGS } from "./shared.ts";

const ReplaceInput = t.Array(AddressEntryInput, {
  description: "The whole new list; an empty array clears it. Duplicates collapse.",
});

// Checked before the schema so `param` names the body itself, not a place inside it.
function checkReplaceShape(body: unknown): void {
  if (!Array.isArray(body)) throw invalidRequest("The request body must be a JSON array of address entries.", "/");
}

export const replaceAddresses: Operation = {
  key: operationKey("put", PATH),
  errors: [...BODY, "invalid_address", "invalid_chain", "chain_not_enabled", "addresses_limit_exceeded", "quota_exceeded", "not_found"],
  examples: {
    request: [WALLET, OTHER],
    response: { "200": exampleSubscription({ addresses: [WALLET, OTHER], hasMore: false, updated: UPDATED }) },
  },
  route: (deps) =>
    new Elysia({ name: replaceAddresses.key }).put(
      PATH,
      async ({ params, body, request }) => {
        const { keyId, id } = subscriptionRef(request, params.id);
        const res = await rpc(() => deps.subscriptions.replaceAddresses({ keyId, id, addresses: body }, CHANGE_OPTIONS));
        return renderSubscription(present(res.subscription), "detailed");
      },
      {
        params: SubscriptionIdParams,
        transform: ({ body }) => checkReplaceShape(body),
        body: ReplaceInput,
        response: { 200: SubscriptionSchema, ...errorResponses(400, 401, 403, 404, 413, 415, 429, 503) },
        detail: {
          summary: "Replace the whole address list",
          description:
            `All or nothing: an invalid item fails the request with its code and detail {index, input}. The response inlines up to ${INLINE_ADDRESSES} addresses.`,
          tags: TAGS,
          security: SECURITY,
        },
      },
    ),
};
