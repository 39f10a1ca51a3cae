// POST /v1/subscriptions/:id/backfills/:backfillId/cancel: stops a queued or running job; a finished one is
// returned unchanged.
import { Elysia } from "elysia";
import { principalOf } from "../../context.ts";
import { WRITE_RPC_OPTIONS, rpc } from "../../deps.ts";
import { exampleBackfill } from "../../docs-examples.ts";
import { idempotencyFor, replayHeaders } from "../../idempotency.ts";
import { IdempotencyHeaders, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { subscriptionId } from "../subscriptions/shared.ts";
import { BackfillParams, BackfillSchema, TAGS, backfillClient, renderBackfill } from "./shared.ts";

const PATH = "/v1/subscriptions/:id/backfills/:backfillId/cancel";

export const cancelBackfill: Operation = {
  key: operationKey("post", PATH),
  examples: { response: { "200": exampleBackfill("canceled", 20_100, 512) } },
  route: (deps) => {
  const client = backfillClient(deps);
  return new Elysia({ name: cancelBackfill.key }).post(
    PATH,
    async ({ params, request, set }) => {
      const { keyId } = principalOf(request);
      const id = subscriptionId(params.id);
      const idempotency = idempotencyFor(request, `/v1/subscriptions/${id}/backfills/${params.backfillId}/cancel`);
      const res = await rpc(() => client.cancelBackfill({ keyId, subscriptionId: id, id: params.backfillId, idempotency }, WRITE_RPC_OPTIONS));
      Object.assign(set.headers, replayHeaders(res.idempotency));
      return renderBackfill(res.backfill);
    },
    {
      params: BackfillParams,
      headers: IdempotencyHeaders,
      response: { 200: BackfillSchema, ...errorResponses(401, 404, 409, 413, 415, 429, 503) },
      detail: {
        summary: "Cancel a backfill",
        description: "Events it already made stay. Canceling a completed, failed or canceled job returns it unchanged. Idempotency-Key honoured.",
        tags: TAGS,
        security: SECURITY,
      },
    },
  );
},
};
