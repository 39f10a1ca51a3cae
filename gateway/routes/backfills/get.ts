// GET /v1/subscriptions/:id/backfills/:backfillId: one job and its progress.
import { Elysia } from "elysia";
import { principalOf } from "../../context.ts";
import { RPC_OPTIONS, rpc } from "../../deps.ts";
import { exampleBackfill } from "../../docs-examples.ts";
import { errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { subscriptionId } from "../subscriptions/shared.ts";
import { BackfillParams, BackfillSchema, TAGS, backfillClient, renderBackfill } from "./shared.ts";

const PATH = "/v1/subscriptions/:id/backfills/:backfillId";

export const getBackfill: Operation = {
  key: operationKey("get", PATH),
  examples: { response: { "200": exampleBackfill("running", 12_400, 316) } },
  route: (deps) => {
  const client = backfillClient(deps);
  return new Elysia({ name: getBackfill.key }).get(
    PATH,
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
},
};
