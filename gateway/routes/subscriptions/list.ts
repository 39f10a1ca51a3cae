// GET /v1/subscriptions: the key's subscriptions, newest first, a page at a time.
import { Elysia } from "elysia";
import { queryPageLimit } from "../../../common/page-token.ts";
import { principalOf } from "../../context.ts";
import { RPC_OPTIONS, rpc } from "../../deps.ts";
import { PAGE } from "../../docs-errors.ts";
import { exampleSubscription } from "../../docs-examples.ts";
import { renderSubscription, type SubscriptionJson } from "../../render.ts";
import { PageQuery, SubscriptionPageSchema, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { TAGS } from "./shared.ts";

const PATH = "/v1/subscriptions";

export const listSubscriptions: Operation = {
  key: operationKey("get", PATH),
  errors: PAGE,
  examples: { response: { "200": { items: [exampleSubscription({ addresses: [] })] } } },
  route: (deps) =>
    new Elysia({ name: listSubscriptions.key }).get(
      PATH,
      async ({ query, request }) => {
        const { keyId } = principalOf(request);
        const res = await rpc(() =>
          deps.subscriptions.listSubscriptions(
            { keyId, limit: queryPageLimit(query.limit), pageToken: query.nextPageToken ?? "" },
            RPC_OPTIONS,
          ),
        );
        const page: { items: SubscriptionJson[]; nextPageToken?: string } = {
          items: res.items.map((s) => renderSubscription(s, "summary")),
        };
        if (res.nextPageToken) page.nextPageToken = res.nextPageToken;
        return page;
      },
      {
        query: PageQuery,
        response: { 200: SubscriptionPageSchema, ...errorResponses(400, 401, 429, 503) },
        detail: { summary: "List subscriptions, newest first", tags: TAGS, security: SECURITY },
      },
    ),
};
