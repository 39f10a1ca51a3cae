// GET /v1/subscriptions/:id/events/:eventId: one event of the delivery log.
import { Elysia } from "elysia";
import { CONFIRMED } from "../../../common/contract/index.ts";
import { RPC_OPTIONS, rpc } from "../../deps.ts";
import { exampleEventView } from "../../docs-examples.ts";
import { errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { deliveryAccess } from "./access.ts";
import { EventParams, EventViewSchema, TAGS, eventId, eventJson, jsonResponse } from "./view.ts";

const PATH = "/v1/subscriptions/:id/events/:eventId";

export const getEvent: Operation = {
  key: operationKey("get", PATH),
  errors: ["not_found"],
  examples: { response: { "200": exampleEventView(CONFIRMED, "delivered") } },
  route: (deps) => {
    const { delivery, owned } = deliveryAccess(deps);
    return new Elysia({ name: getEvent.key }).get(
      PATH,
      async ({ params, request }) => {
        const ref = await owned(request, params.id);
        const id = eventId(params.eventId);
        const res = await rpc(() => delivery().getEvent({ ...ref, eventId: id }, RPC_OPTIONS));
        return jsonResponse(eventJson(res.event));
      },
      {
        params: EventParams,
        response: { 200: EventViewSchema, ...errorResponses(401, 404, 429, 503) },
        detail: { summary: "Get one event", tags: TAGS, security: SECURITY },
      },
    );
  },
};
