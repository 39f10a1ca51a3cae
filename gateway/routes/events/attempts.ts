// GET /v1/subscriptions/:id/events/:eventId/attempts: an event's delivery attempts, newest first.
import { Elysia, t, type Static } from "elysia";
import { RESPONSE_BODY_LIMIT } from "../../../common/contract/index.ts";
import { queryPageLimit } from "../../../common/page-token.ts";
import type { Attempt } from "../../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { RPC_OPTIONS, rpc } from "../../deps.ts";
import { isoTime } from "../../render.ts";
import { PageQuery, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { deliveryAccess } from "./access.ts";
import { EventParams, TAGS, eventId } from "./view.ts";

const PATH = "/v1/subscriptions/:id/events/:eventId/attempts";

const AttemptSchema = t.Object(
  {
    id: t.String({ description: "att_ + ULID." }),
    date: t.String({ format: "date-time", description: "When the attempt started." }),
    durationMs: t.Integer(),
    responseStatus: t.Union([t.Integer(), t.Null()], { description: "The HTTP status; null when the attempt got no HTTP response (always null for amqp and nats)." }),
    responseBody: t.Union([t.String(), t.Null()], {
      description:
        `First ${RESPONSE_BODY_LIMIT.toLocaleString("en-US")} bytes of the response (cut on a UTF-8 boundary); null when an https attempt got no response. ` +
        "For amqp and nats destinations always the broker's short answer, failed attempts included: acked, returned: NO_ROUTE, no stream, timeout, ….",
    }),
    error: t.Union([t.String(), t.Null()], {
      description: "Null when the attempt succeeded or the destination answered with an HTTP status; else a short reason: timeout, connection refused, TLS error, SSRF block, or the broker's answer (returned: NO_ROUTE, no stream, nacked, …).",
    }),
    trigger: t.Union([t.Literal("automatic"), t.Literal("manual")], { description: "manual: in a cycle started by retry or recover." }),
  },
  { title: "Attempt" },
);
type AttemptJson = Static<typeof AttemptSchema>;

const AttemptPageSchema = t.Object(
  { items: t.Array(AttemptSchema), nextPageToken: t.Optional(t.String({ description: "Absent on the last page." })) },
  { title: "AttemptPage" },
);

function renderAttempt(a: Attempt): AttemptJson {
  return {
    id: a.id,
    date: isoTime(a.dateMs),
    durationMs: a.durationMs,
    responseStatus: a.responseStatus ?? null,
    responseBody: a.responseBody ?? null,
    error: a.error ?? null,
    trigger: a.trigger === "manual" ? "manual" : "automatic",
  };
}

export const listAttempts: Operation = {
  key: operationKey("get", PATH),
  examples: {
    response: {
      "200": {
        items: [
          { id: "att_01JDX4R8B2C3D4E5F6G7H8J9K0", date: "2026-11-22T02:27:04.410Z", durationMs: 212, responseStatus: 204, responseBody: "", error: null, trigger: "manual" },
          { id: "att_01JDX4Q4A1B2C3D4E5F6G7H8J9", date: "2026-11-22T02:26:03.150Z", durationMs: 15000, responseStatus: null, responseBody: null, error: "timeout: no complete response within 15000 ms", trigger: "automatic" },
        ],
      },
    },
  },
  route: (deps) => {
    const { delivery, owned } = deliveryAccess(deps);
    return new Elysia({ name: listAttempts.key }).get(
      PATH,
      async ({ params, query, request }) => {
        const ref = await owned(request, params.id);
        const id = eventId(params.eventId);
        const res = await rpc(() =>
          delivery().listAttempts({ ...ref, eventId: id, limit: queryPageLimit(query.limit), pageToken: query.nextPageToken ?? "" }, RPC_OPTIONS),
        );
        const page: { items: AttemptJson[]; nextPageToken?: string } = { items: res.items.map(renderAttempt) };
        if (res.nextPageToken) page.nextPageToken = res.nextPageToken;
        return page;
      },
      {
        params: EventParams,
        query: PageQuery,
        response: { 200: AttemptPageSchema, ...errorResponses(400, 401, 404, 429, 503) },
        detail: {
          summary: "List an event's delivery attempts, newest first",
          description: "Every attempt is kept as long as its event. trigger is manual for attempts of a cycle started by retry or recover.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    );
  },
};
