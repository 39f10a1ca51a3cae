// GET /v1/subscriptions/:id/backfills/:backfillId: one job and its progress.
import { Elysia } from "elysia";
import { principalOf } from "../../context.ts";
import { RPC_OPTIONS, rpc, type GatewayDeps } from "../../deps.ts";
import { errorResponses } from "../../schemas.ts";
import { subscriptionId } from "../subscriptions.ts";
import { BackfillParams, BackfillSchema, SECURITY, TAGS, backfillClient, renderBackfill } from "./shared.ts";

export function getBackfillRoute(deps: GatewayDeps) {
  const client = backfillClient(deps);
  return new Elysia({ name: "routes-backfills-get" }).get(
    "/v1/subscriptions/:id/backfills/:backfillId",
    async ({ params, request }) => {
      const { keyId } = principalOf(request);
      const res = await rpc(() => client.getBackfill({ keyId, subscriptionId: subscriptionId(params.id), id: params.backfillId }, RPC_OPTIONS));
      return renderBackfill(res.backfill);
    },
    {
      params: BackfillParams,
      response: { 200: BackfillSchema, ...errorResponses(401, 404, 429, 503) },
      detail: { summary: "Get a backfill and its progress", tags: TAGS, security: SECURITY },
    },
  );
}
