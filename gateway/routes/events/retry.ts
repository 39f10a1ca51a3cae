// POST /v1/subscriptions/:id/events/:eventId/retry: a failed or delivered event back to pending, a new cycle.
import { Elysia } from "elysia";
import { CONFIRMED } from "../../../common/contract/index.ts";
import { WRITE_RPC_OPTIONS, rpc } from "../../deps.ts";
import { IDEMPOTENT } from "../../docs-errors.ts";
import { exampleEventView } from "../../docs-examples.ts";
import { idempotencyFor, replayHeaders } from "../../idempotency.ts";
import { IdempotencyHeaders, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { deliveryAccess } from "./access.ts";
import { EventParams, EventViewSchema, TAGS, eventId, eventJson, jsonResponse } from "./view.ts";

const PATH = "/v1/subscriptions/:id/events/:eventId/retry";

export const retryEvent: Operation = {
  key: operationKey("post", PATH),
  errors: ["event_not_retryable", "subscription_disabled", ...IDEMPOTENT, "payload_too_large", "unsupported_media_type", "not_found"],
  examples: { response: { "200": exampleEventView(CONFIRMED, "pending") } },
  route: (deps) => {
    const { delivery, owned } = deliveryAccess(deps);
    return new Elysia({ name: retryEvent.key }).post(
      PATH,
      async ({ params, request, set }) => {
        const ref = await owned(request, params.id);
        const id = eventId(params.eventId);
        const idempotency = idempotencyFor(request, `/v1/subscriptions/${ref.subscriptionId}/events/${id}/retry`);
        const res = await rpc(() => delivery().retryEvent({ ...ref, eventId: id, idempotency }, WRITE_RPC_OPTIONS));
        Object.assign(set.headers, replayHeaders(res.idempotency));
        return jsonResponse(eventJson(res.event));
      },
      {
        params: EventParams,
        headers: IdempotencyHeaders,
        response: { 200: EventViewSchema, ...errorResponses(401, 404, 409, 413, 415, 429, 503) },
        detail: {
          summary: "Retry an event",
          description:
            "For failed and delivered events (a re-send; a success adds to deliveryCount): back to pending with attempts 0, the automatic schedule restarts. 409 event_not_retryable for a pending event, 409 subscription_disabled on a disabled subscription.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    );
  },
};
