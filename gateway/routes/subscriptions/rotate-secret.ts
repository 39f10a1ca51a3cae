// POST /v1/subscriptions/:id/secrets/rotate: a new signing secret, the previous one signing on for a grace period.
import { Elysia, t } from "elysia";
import { DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS } from "../../../common/contract/index.ts";
import { WRITE_RPC_OPTIONS, rpc } from "../../deps.ts";
import { BODY, IDEMPOTENT } from "../../docs-errors.ts";
import { UPDATED, WALLET, exampleSubscription } from "../../docs-examples.ts";
import { idempotencyFor, replayHeaders } from "../../idempotency.ts";
import { renderSubscription } from "../../render.ts";
import { IdempotencyHeaders, InputObject, SubscriptionIdParams, SubscriptionSchema, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { TAGS, present, subscriptionRef } from "./shared.ts";

const PATH = "/v1/subscriptions/:id/secrets/rotate";

const RotateInput = t.Optional(
  InputObject({
    gracePeriodSeconds: t.Optional(
      // t.Number, not t.Integer: Elysia's Integer accepts numeric strings, and a string is the wrong type here.
      t.Number({
        multipleOf: 1,
        minimum: 0,
        maximum: MAX_GRACE_SECONDS,
        description: `Whole seconds the previous secret keeps signing (default ${DEFAULT_GRACE_SECONDS}).`,
      }),
    ),
    secret: t.Optional(t.String({ description: "A secret to install: whsec_ + base64 of 24 to 64 bytes. Generated when omitted." })),
  }),
);

export const rotateSecret: Operation = {
  key: operationKey("post", PATH),
  errors: [...BODY, ...IDEMPOTENT, "not_found"],
  examples: {
    request: { gracePeriodSeconds: 3600 },
    response: { "200": exampleSubscription({ secret: true, addresses: [WALLET], hasMore: false, updated: UPDATED }) },
  },
  route: (deps) =>
    new Elysia({ name: rotateSecret.key }).post(
      PATH,
      async ({ params, body, request, set }) => {
        const { keyId, id } = subscriptionRef(request, params.id);
        const idempotency = idempotencyFor(request, `/v1/subscriptions/${id}/secrets/rotate`);
        const res = await rpc(() =>
          deps.subscriptions.rotateSecret(
            { keyId, id, gracePeriodSeconds: body?.gracePeriodSeconds, secret: body?.secret ?? "", idempotency },
            WRITE_RPC_OPTIONS,
          ),
        );
        Object.assign(set.headers, replayHeaders(res.idempotency));
        return renderSubscription(present(res.subscription), "detailed", true);
      },
      {
        params: SubscriptionIdParams,
        body: RotateInput,
        headers: IdempotencyHeaders,
        response: { 200: SubscriptionSchema, ...errorResponses(400, 401, 404, 409, 413, 415, 429, 503) },
        detail: {
          summary: "Rotate the signing secret",
          description:
            "Body optional. The previous secret keeps signing (second signature) for gracePeriodSeconds. The response carries the new secret.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    ),
};
