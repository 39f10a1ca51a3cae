// GET /v1/subscriptions/:id/backfills: the subscription's jobs, newest first, paged like every list.
import { Elysia } from "elysia";
import { queryPageLimit } from "../../../common/page-token.ts";
import { principalOf } from "../../context.ts";
import { RPC_OPTIONS, rpc, type GatewayDeps } from "../../deps.ts";
import { PageQuery, SubscriptionIdParams, errorResponses } from "../../schemas.ts";
import { subscriptionId } from "../subscriptions.ts";
import { BackfillPageSchema, SECURITY, TAGS, backfillClient, renderBackfill, type BackfillJson } from "./shared.ts";

export function listBackfillsRoute(deps: GatewayDeps) {
  const client = backfillClient(deps);
  return new Elysia({ name: "routes-backfills-list" }).get(
    "/v1/subscriptions/:id/backfills",
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
}
