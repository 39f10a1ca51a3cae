// /v1/subscriptions: create, list, get, replace, delete, rotate the signing secret. Maps JSON ⇄ registry RPCs;
// every business rule (URL policy, events, description, idempotency records, page tokens) is the registry's.
import { createClient } from "@connectrpc/connect";
import { Elysia, t, type Static } from "elysia";
import { log } from "../../common/logger.ts";
import { DeliveryService } from "../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { ApiError, internalError, notFound } from "../../common/contract/index.ts";
import { isId } from "../../common/ids.ts";
import { queryPageLimit } from "../../common/page-token.ts";
import { principalOf } from "../context.ts";
import { RPC_OPTIONS, WRITE_RPC_OPTIONS, rpc, type GatewayDeps } from "../deps.ts";
import { idempotencyFor, replayHeaders } from "../idempotency.ts";
import { matchRequest, renderSubscription, type SubscriptionJson } from "../render.ts";
import {
  DestinationInput,
  EventsInput,
  IdempotencyHeaders,
  InputObject,
  MatchInput,
  PageQuery,
  StatusInput,
  SubscriptionIdParams,
  SubscriptionPageSchema,
  SubscriptionSchema,
  errorResponses,
} from "../schemas.ts";
import type { Subscription } from "../../gen/webhooks/registry/v1/registry_pb.ts";

const TAGS = ["subscriptions"];
const SECURITY = [{ bearer: [] }];

/** A malformed id cannot exist: it is simply not found (docs/CONTRACT.md). */
export function subscriptionId(id: string): string {
  if (!isId("sub", id)) throw notFound();
  return id;
}

function present(s: Subscription | undefined): Subscription {
  // The registry always answers with the subscription; its absence is a broken dependency, not the caller's fault.
  if (!s) throw internalError();
  return s;
}

/** The JSON destination as the registry's message; omitted fields are "" (the registry says which are required). */
function destinationRequest(d: Static<typeof DestinationInput>) {
  return {
    type: d.type,
    url: d.url ?? "",
    broker: d.broker ?? "",
    exchange: d.exchange ?? "",
    routingKey: d.routingKey ?? "",
    subject: d.subject ?? "",
  };
}

const SubscriptionInput = {
  destination: DestinationInput,
  events: EventsInput,
  status: t.Optional(StatusInput),
  description: t.Optional(t.String({ description: "Free label, at most 512 characters. Empty when omitted." })),
  match: t.Optional(MatchInput),
};
const SubscriptionBody = InputObject(SubscriptionInput);

/**
 * A create or replace body as the registry's fields. An omitted status is `omittedStatus`: "" on create (the
 * registry's default), "enabled" on a replacement, where whatever is omitted returns to its default.
 */
function subscriptionFields(body: Static<typeof SubscriptionBody>, omittedStatus: "" | "enabled") {
  return {
    destination: destinationRequest(body.destination),
    events: body.events,
    status: body.status ?? omittedStatus,
    description: body.description ?? "",
    match: matchRequest(body.match),
  };
}

const RotateInput = t.Optional(
  InputObject({
    gracePeriodSeconds: t.Optional(
      // t.Number, not t.Integer: Elysia's Integer accepts numeric strings, and a string is the wrong type here.
      t.Number({ multipleOf: 1, minimum: 0, maximum: 604_800, description: "Whole seconds the previous secret keeps signing (default 86400)." }),
    ),
    secret: t.Optional(t.String({ description: "A secret to install: whsec_ + base64 of 24 to 64 bytes. Generated when omitted." })),
  }),
);

/**
 * After the registry deleted a subscription, its pending deliveries stop and its events go (docs/CONTRACT.md). If the
 * deliverer cannot be reached the subscription is gone all the same: the deliverer cancels the pending events
 * itself when it finds the subscription missing, and the events' URLs are 404 with their subscription.
 */
async function deleteEvents(deps: GatewayDeps, subscriptionId: string): Promise<void> {
  if (!deps.deliverer) return;
  try {
    await createClient(DeliveryService, deps.deliverer).deleteSubscriptionEvents({ subscriptionId }, RPC_OPTIONS);
  } catch (err) {
    log.warn("deleting a deleted subscription's events failed; the deliverer will cancel them", { subscriptionId, err });
  }
}

export function subscriptionRoutes(deps: GatewayDeps) {
  const subs = deps.subscriptions;

  return new Elysia({ name: "routes-subscriptions" })
    .post(
      "/v1/subscriptions",
      async ({ body, request, set }): Promise<SubscriptionJson> => {
        const { keyId } = principalOf(request);
        const idempotency = idempotencyFor(request, "/v1/subscriptions");
        const res = await rpc(() =>
          subs.createSubscription(
            { keyId, ...subscriptionFields(body, ""), idempotency },
            WRITE_RPC_OPTIONS,
          ),
        );
        set.status = 201;
        Object.assign(set.headers, replayHeaders(res.idempotency));
        return renderSubscription(present(res.subscription), "created", true);
      },
      {
        body: SubscriptionBody,
        headers: IdempotencyHeaders,
        response: { 201: SubscriptionSchema, ...errorResponses(400, 401, 409, 413, 415, 429, 503) },
        detail: {
          summary: "Create a subscription",
          description: "Returns the subscription with its signing secret (shown here and after rotation only).",
          tags: TAGS,
          security: SECURITY,
        },
      },
    )
    .get(
      "/v1/subscriptions",
      async ({ query, request }) => {
        const { keyId } = principalOf(request);
        const res = await rpc(() =>
          subs.listSubscriptions({ keyId, limit: queryPageLimit(query.limit), pageToken: query.nextPageToken ?? "" }, RPC_OPTIONS),
        );
        const page: { items: SubscriptionJson[]; nextPageToken?: string } = {
          items: res.items.map((s) => renderSubscription(s, "summary")),
        };
        if (res.nextPageToken) page.nextPageToken = res.nextPageToken;
        return page;
      },
      {
        query: PageQuery,
        response: { 200: SubscriptionPageSchema, ...errorResponses(400, 401, 429, 503) },
        detail: { summary: "List subscriptions, newest first", tags: TAGS, security: SECURITY },
      },
    )
    .get(
      "/v1/subscriptions/:id",
      async ({ params, request }) => {
        const { keyId } = principalOf(request);
        const id = subscriptionId(params.id);
        const res = await rpc(() => subs.getSubscription({ keyId, id }, RPC_OPTIONS));
        return renderSubscription(present(res.subscription), "detailed");
      },
      {
        params: SubscriptionIdParams,
        response: { 200: SubscriptionSchema, ...errorResponses(401, 404, 429, 503) },
        detail: { summary: "Get a subscription with up to 200 inlined addresses", tags: TAGS, security: SECURITY },
      },
    )
    .put(
      "/v1/subscriptions/:id",
      async ({ params, body, request }) => {
        const { keyId } = principalOf(request);
        const id = subscriptionId(params.id);
        const res = await rpc(() =>
          subs.updateSubscription(
            { keyId, id, ...subscriptionFields(body, "enabled") },
            WRITE_RPC_OPTIONS,
          ),
        );
        return renderSubscription(present(res.subscription), "summary");
      },
      {
        params: SubscriptionIdParams,
        body: SubscriptionBody,
        response: { 200: SubscriptionSchema, ...errorResponses(400, 401, 404, 413, 415, 429, 503) },
        detail: {
          summary: "Replace a subscription's destination, events, status, description and match conditions",
          description:
            "Omitted status becomes enabled, omitted description becomes empty and omitted match becomes the default. Address filters and the secret are untouched.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    )
    .delete(
      "/v1/subscriptions/:id",
      async ({ params, request, set }) => {
        const { keyId } = principalOf(request);
        const id = subscriptionId(params.id);
        await rpc(() => subs.deleteSubscription({ keyId, id }, WRITE_RPC_OPTIONS));
        await deleteEvents(deps, id);
        set.status = 204;
        return new Response(null, { status: 204 });
      },
      {
        params: SubscriptionIdParams,
        response: { 204: t.Void({ description: "Deleted; no body." }), ...errorResponses(401, 404, 429, 503) },
        detail: {
          summary: "Delete a subscription",
          description: "Its addresses stop matching at once, pending deliveries are cancelled and its events are removed.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    )
    .post(
      "/v1/subscriptions/:id/secrets/rotate",
      async ({ params, body, request, set }) => {
        const { keyId } = principalOf(request);
        const id = subscriptionId(params.id);
        const idempotency = idempotencyFor(request, `/v1/subscriptions/${id}/secrets/rotate`);
        const res = await rpc(() =>
          subs.rotateSecret(
            {
              keyId,
              id,
              gracePeriodSeconds: body?.gracePeriodSeconds,
              secret: body?.secret ?? "",
              idempotency,
            },
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
    );
}
