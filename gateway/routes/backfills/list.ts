// GET /v1/subscriptions/:id/backfills: the subscription's jobs, newest first, paged like every list.
import { Elysia } from "elysia";
import { queryPageLimit } from "../../../common/page-token.ts";
import { principalOf } from "../../context.ts";
import { RPC_OPTIONS, rpc } from "../../deps.ts";
import { exampleBackfill } from "../../docs-examples.ts";
import { PageQuery, SubscriptionIdParams, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { subscriptionId } from "../subscriptions/shared.ts";
import { BackfillPageSchema, TAGS, backfillClient, renderBackfill, type BackfillJson } from "./shared.ts";

const PATH = "/v1/subscriptions/:id/backfills";

export const listBackfills: Operation = {
  key: operationKey("get", PATH),
  examples: { response: { "200": { items: [exampleBackfill("running", 12_400, 316)] } } },
  route: (deps) => {
  const client = backfillClient(deps);
  return new Elysia({ name: listBackfills.key }).get(
    PATH,
    async ({ params, query, request }) => {
      const { keyId } = principalOf(request);
      const res = await rpc(() =>
        client.listBackfills(
          { keyId, subscriptionId: subscriptionId(params.id), limit: queryPageLimit(query.limit), pageToken: query.nextPageToken ?? "" },
          RPC_OPTIONS,
        ),
      );
      const page: { items: BackfillJson[]; nextPageToken?: string } = { items: res.items.map(renderBackfill) };
      if (res.nextPageToken) page.nextPageToken = res.nextPageToken;
      return page;
    },
    {
      params: SubscriptionIdParams,
      query: PageQuery,
      response: { 200: BackfillPageSchema, ...errorResponses(400, 401, 404, 429, 503) },
      detail: { summary: "List a subscription's backfills, newest first", tags: TAGS, security: SECURITY },
    },
  );
},
};
