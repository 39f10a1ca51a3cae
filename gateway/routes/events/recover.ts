// POST /v1/subscriptions/:id/events/recover: re-queue every failed (or delivered) event since a time.
import { Elysia, t } from "elysia";
import { RECOVER_MAX_AGE_MS } from "../../../common/contract/index.ts";
import { rpc } from "../../deps.ts";
import { idempotencyFor, replayHeaders } from "../../idempotency.ts";
import { IdempotencyHeaders, InputObject, SubscriptionIdParams, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { deliveryAccess } from "./access.ts";
import { IsoTime, parseTime } from "./time.ts";
import { TAGS } from "./view.ts";

const PATH = "/v1/subscriptions/:id/events/recover";
/** A recover answers once every matching event is queued: far longer than an ordinary call may take. */
const RECOVER_RPC_OPTIONS = { timeoutMs: 300_000 } as const;

const RecoverInput = InputObject({
  since: IsoTime(`Events created at or after this time; at most ${RECOVER_MAX_AGE_MS / 86_400_000} days ago, not in the future.`),
  until: t.Optional(IsoTime("Events created before this time; default now.")),
  status: t.Optional(t.Union([t.Literal("failed"), t.Literal("delivered")], { description: "Which events to re-queue; default failed." })),
});

const RecoverResultSchema = t.Object(
  { recovered: t.Integer({ description: "Events re-queued (each starts a manual delivery cycle)." }) },
  { title: "RecoverResult" },
);

export const recoverEvents: Operation = {
  key: operationKey("post", PATH),
  examples: {
    request: { since: "2026-11-22T01:00:00.000Z", status: "failed" },
    response: { "202": { recovered: 1250 } },
  },
  route: (deps) => {
    const { delivery, owned } = deliveryAccess(deps);
    return new Elysia({ name: recoverEvents.key }).post(
      PATH,
      async ({ params, body, request, set }) => {
        const ref = await owned(request, params.id);
        const sinceMs = parseTime(body.since, "/since");
        const untilMs = body.until === undefined ? undefined : parseTime(body.until, "/until");
        const idempotency = idempotencyFor(request, `/v1/subscriptions/${ref.subscriptionId}/events/recover`);
        const res = await rpc(() =>
          delivery().recoverEvents({ ...ref, sinceMs, untilMs, status: body.status ?? "", idempotency }, RECOVER_RPC_OPTIONS),
        );
        Object.assign(set.headers, replayHeaders(res.idempotency));
        set.status = 202;
        return { recovered: Number(res.recovered) };
      },
      {
        params: SubscriptionIdParams,
        body: RecoverInput,
        headers: IdempotencyHeaders,
        response: { 202: RecoverResultSchema, ...errorResponses(400, 401, 404, 409, 413, 415, 429, 503) },
        detail: {
          summary: "Recover: re-queue every failed (or delivered) event since a time",
          description:
            "Answers once every matching event is queued again (in batches, each a short transaction); each starts a manual delivery cycle. 409 subscription_disabled on a disabled subscription. Idempotency-Key honoured.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    );
  },
};
