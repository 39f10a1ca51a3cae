// /v1/subscriptions/:id/filters/addresses: PATCH (add/remove with per-item results), PUT (replace the whole list),
// GET (the list in order of addition). Shapes are checked here; every rule with its own error code (base58check,
// chains, limits, page tokens) is the registry's (registry/addresses.ts).
import { Elysia, t } from "elysia";
import { ADDRESS_CHANGE_BUDGET_MS, writeRpcDeadline } from "../../common/deadlines.ts";
import { ApiError, internalError, invalidRequest } from "../../common/contract/index.ts";
import type { SkippedAddress, Subscription } from "../../gen/webhooks/registry/v1/registry_pb.ts";
import { principalOf } from "../context.ts";
import { RPC_OPTIONS, rpc, type GatewayDeps } from "../deps.ts";
import { renderAddress, renderSubscription, type AddressJson } from "../render.ts";
import { AddressEntrySchema, InputObject, PageQuery, SubscriptionIdParams, SubscriptionSchema, errorResponses } from "../schemas.ts";
import { subscriptionId } from "./subscriptions.ts";
import { queryPageLimit } from "../../common/page-token.ts";

const TAGS = ["address filters"];
const SECURITY = [{ bearer: [] }];
/** A change of up to 10,000 addresses: the bulk budget, and the wait for a COMMIT in flight (common/deadlines.ts). */
const CHANGE_OPTIONS = { timeoutMs: writeRpcDeadline(ADDRESS_CHANGE_BUDGET_MS) } as const;

const AddressEntryInput = InputObject({
  chainId: t.String({ description: "CAIP-2 chain id: tron:mainnet, tron:nile or tron:shasta." }),
  address: t.String({ description: "Base58check TRON address (T..., 34 characters)." }),
});

const PatchInput = InputObject({
  add: t.Optional(t.Array(AddressEntryInput, { description: "Entries to add (applied after the removals)." })),
  remove: t.Optional(t.Array(AddressEntryInput, { description: "Entries to remove." })),
});

const ReplaceInput = t.Array(AddressEntryInput, {
  description: "The whole new list; an empty array clears it. Duplicates collapse.",
});

const SkippedSchema = t.Object({
  input: AddressEntrySchema,
  reason: t.Union([t.Literal("not_found"), t.Literal("invalid_address"), t.Literal("invalid_chain"), t.Literal("chain_not_enabled")]),
  detail: t.Optional(t.String()),
});

const PatchResultSchema = t.Object(
  {
    subscription: SubscriptionSchema,
    results: t.Object({
      added: t.Array(AddressEntrySchema, { description: "Entries that were not in the list before." }),
      removed: t.Array(AddressEntrySchema),
      skipped: t.Array(SkippedSchema, { description: "Items not applied, each with its reason." }),
    }),
  },
  { title: "AddressPatchResult" },
);

const AddressPageSchema = t.Object(
  {
    items: t.Array(AddressEntrySchema),
    nextPageToken: t.Union([t.String(), t.Null()], { description: "null on the last page." }),
  },
  { title: "AddressPage" },
);

function shapeError(message: string, param: string): ApiError {
  return invalidRequest(message, param);
}

// The top-level shape is checked before the schema so `param` names the field that is wrong (the schema's own first
// complaint about a non-array would point inside it).
function checkPatchShape(body: unknown): void {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw shapeError("The request body must be a JSON object with add and/or remove arrays.", "/");
  }
  for (const field of ["add", "remove"] as const) {
    const value = (body as Record<string, unknown>)[field];
    if (value !== undefined && !Array.isArray(value)) throw shapeError(`${field} must be an array of address entries.`, `/${field}`);
  }
}

function checkReplaceShape(body: unknown): void {
  if (!Array.isArray(body)) throw shapeError("The request body must be a JSON array of address entries.", "/");
}

type SkippedReason = "not_found" | "invalid_address" | "invalid_chain" | "chain_not_enabled";

function present(s: Subscription | undefined): Subscription {
  if (!s) throw internalError();
  return s;
}

function renderSkipped(s: SkippedAddress): { input: AddressJson; reason: SkippedReason; detail?: string } {
  const out: { input: AddressJson; reason: SkippedReason; detail?: string } = {
    input: { chainId: s.input?.chainId ?? "", address: s.input?.address ?? "" },
    reason: s.reason as SkippedReason,
  };
  if (s.detail) out.detail = s.detail;
  return out;
}

export function addressRoutes(deps: GatewayDeps) {
  const subs = deps.subscriptions;

  return new Elysia({ name: "routes-addresses" })
    .patch(
      "/v1/subscriptions/:id/filters/addresses",
      async ({ params, body, request }) => {
        const { keyId } = principalOf(request);
        const id = subscriptionId(params.id);
        const add = body.add ?? [];
        const remove = body.remove ?? [];
        if (add.length === 0 && remove.length === 0) {
          throw invalidRequest("add or remove must list at least one address entry.", "/add");
        }
        const res = await rpc(() => subs.patchAddresses({ keyId, id, add, remove }, CHANGE_OPTIONS));
        return {
          subscription: renderSubscription(present(res.subscription), "detailed"),
          results: {
            added: res.added.map(renderAddress),
            removed: res.removed.map(renderAddress),
            skipped: res.skipped.map(renderSkipped),
          },
        };
      },
      {
        params: SubscriptionIdParams,
        transform: ({ body }) => checkPatchShape(body),
        body: PatchInput,
        response: { 200: PatchResultSchema, ...errorResponses(400, 401, 404, 413, 415, 429, 503) },
        detail: {
          summary: "Add and remove watched addresses",
          description:
            "Removals apply before additions, all valid items in one transaction. Invalid items are skipped with their reason " +
            "(invalid_address, invalid_chain, chain_not_enabled; not_found for removing an absent entry). At most 10,000 entries " +
            "per request; over a limit nothing is applied (addresses_limit_exceeded).",
          tags: TAGS,
          security: SECURITY,
        },
      },
    )
    .put(
      "/v1/subscriptions/:id/filters/addresses",
      async ({ params, body, request }) => {
        const { keyId } = principalOf(request);
        const id = subscriptionId(params.id);
        const res = await rpc(() => subs.replaceAddresses({ keyId, id, addresses: body }, CHANGE_OPTIONS));
        return renderSubscription(present(res.subscription), "detailed");
      },
      {
        params: SubscriptionIdParams,
        transform: ({ body }) => checkReplaceShape(body),
        body: ReplaceInput,
        response: { 200: SubscriptionSchema, ...errorResponses(400, 401, 404, 413, 415, 429, 503) },
        detail: {
          summary: "Replace the whole address list",
          description:
            "All or nothing: an invalid item fails the request with its code and detail {index, input}. The response inlines up to 200 addresses.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    )
    .get(
      "/v1/subscriptions/:id/filters/addresses",
      async ({ params, query, request }) => {
        const { keyId } = principalOf(request);
        const id = subscriptionId(params.id);
        const res = await rpc(() =>
          subs.listAddresses({ keyId, id, limit: queryPageLimit(query.limit), pageToken: query.nextPageToken ?? "" }, RPC_OPTIONS),
        );
        return { items: res.items.map(renderAddress), nextPageToken: res.nextPageToken === "" ? null : res.nextPageToken };
      },
      {
        params: SubscriptionIdParams,
        query: PageQuery,
        response: { 200: AddressPageSchema, ...errorResponses(400, 401, 404, 429, 503) },
        detail: { summary: "List watched addresses in order of addition", tags: TAGS, security: SECURITY },
      },
    );
}
