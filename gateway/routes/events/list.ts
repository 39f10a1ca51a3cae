// GET /v1/subscriptions/:id/events: a subscription's events, newest first, optionally in one status.
import { Elysia, t } from "elysia";
import { BROADCASTED, CONFIRMED } from "../../../common/contract/index.ts";
import { queryPageLimit } from "../../../common/page-token.ts";
import { RPC_OPTIONS, rpc } from "../../deps.ts";
import { PAGE } from "../../docs-errors.ts";
import { exampleEventView } from "../../docs-examples.ts";
import { InputObject, PageQuery, SubscriptionIdParams, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { deliveryAccess } from "./access.ts";
import { EventPageSchema, TAGS, eventPageJson, jsonResponse } from "./view.ts";

const PATH = "/v1/subscriptions/:id/events";

const EventQuery = InputObject({
  limit: PageQuery.properties.limit,
  status: t.Optional(t.Union([t.Literal("pending"), t.Literal("delivered"), t.Literal("failed")], { description: "Only events in this status." })),
  nextPageToken: PageQuery.properties.nextPageToken,
});

export const listEvents: Operation = {
  key: operationKey("get", PATH),
  errors: [...PAGE, "not_found"],
  examples: {
    response: { "200": { items: [exampleEventView(CONFIRMED, "delivered"), exampleEventView(BROADCASTED, "delivered")] } },
  },
  route: (deps) => {
    const { delivery, owned } = deliveryAccess(deps);
    return new Elysia({ name: listEvents.key }).get(
      PATH,
      async ({ params, query, request }) => {
        const ref = await owned(request, params.id);
        const res = await rpc(() =>
          delivery().listEvents(
            { ...ref, limit: queryPageLimit(query.limit), status: query.status ?? "", pageToken: query.nextPageToken ?? "" },
            RPC_OPTIONS,
          ),
        );
        return jsonResponse(eventPageJson(res.items, res.nextPageToken));
      },
      {
        params: SubscriptionIdParams,
        query: EventQuery,
        response: { 200: EventPageSchema, ...errorResponses(400, 401, 404, 429, 503) },
        detail: { summary: "List a subscription's events, newest first", tags: TAGS, security: SECURITY },
      },
    );
  },
};
