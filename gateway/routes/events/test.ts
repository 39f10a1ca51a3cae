// POST /v1/subscriptions/:id/test: send service.ping, or a sample transfer or activity event, whatever the subscription
// lists.
import { Elysia, t } from "elysia";
import { ACTIVITY_KINDS, BROADCASTED, PING, TRANSFER_KINDS, orList } from "../../../common/contract/index.ts";
import { WRITE_RPC_OPTIONS, rpc } from "../../deps.ts";
import { BODY, IDEMPOTENT } from "../../docs-errors.ts";
import { exampleEventView } from "../../docs-examples.ts";
import { idempotencyFor, replayHeaders } from "../../idempotency.ts";
import { IdempotencyHeaders, InputObject, SubscriptionIdParams, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { deliveryAccess } from "./access.ts";
import { EventViewSchema, TAGS, eventJson, jsonResponse } from "./view.ts";

const PATH = "/v1/subscriptions/:id/test";

const TestInput = t.Optional(
  InputObject({
    kind: t.Optional(t.String({
      description:
        `${PING} (default); ${orList(TRANSFER_KINDS)} for a sample transfer of that kind (failed: reason REVERT); ` +
        `${orList(ACTIVITY_KINDS)} for a sample activity of that kind (mainnet: an unlimited USDT approval to a router, a ` +
        "permission update adding a co-signer, a delegation of energy, USDT blacklisting the wallet). Samples carry test: true.",
    })),
  }),
);

export const sendTestEvent: Operation = {
  key: operationKey("post", PATH),
  errors: [...BODY, "unsupported_event", "subscription_disabled", ...IDEMPOTENT, "not_found"],
  examples: {
    request: { kind: BROADCASTED },
    response: { "200": exampleEventView(BROADCASTED, "pending", true) },
  },
  route: (deps) => {
    const { delivery, owned } = deliveryAccess(deps);
    return new Elysia({ name: sendTestEvent.key }).post(
      PATH,
      async ({ params, body, request, set }) => {
        const ref = await owned(request, params.id);
        const idempotency = idempotencyFor(request, `/v1/subscriptions/${ref.subscriptionId}/test`);
        const res = await rpc(() => delivery().createTestEvent({ ...ref, kind: body?.kind ?? "", idempotency }, WRITE_RPC_OPTIONS));
        Object.assign(set.headers, replayHeaders(res.idempotency));
        return jsonResponse(eventJson(res.event));
      },
      {
        params: SubscriptionIdParams,
        body: TestInput,
        headers: IdempotencyHeaders,
        response: { 200: EventViewSchema, ...errorResponses(400, 401, 404, 409, 413, 415, 429, 503) },
        detail: {
          summary: "Send a test event",
          description:
            `Fires ${PING} (default) or a sample event of any other kind (a transfer: ${BROADCASTED}, .confirmed or ` +
            ".failed; an account activity: wallet.approval, .permission, .resource or .blacklist, each .broadcasted or " +
            ".confirmed), whatever the subscription's events and addresses. 409 subscription_disabled on a disabled subscription.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    );
  },
};
