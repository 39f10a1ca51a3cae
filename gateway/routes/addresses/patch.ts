// PATCH /v1/subscriptions/:id/filters/addresses: add and remove watched addresses, with a result per item.
import { Elysia, t, type Static } from "elysia";
import { MAX_ADDRESSES_PER_REQUEST, invalidRequest } from "../../../common/contract/index.ts";
import type { SkippedAddress } from "../../../gen/webhooks/registry/v1/registry_pb.ts";
import { rpc } from "../../deps.ts";
import { BODY } from "../../docs-errors.ts";
import { OTHER, UPDATED, WALLET, exampleSubscription } from "../../docs-examples.ts";
import { renderAddress, renderSubscription, type AddressJson } from "../../render.ts";
import { AddressEntrySchema, InputObject, SubscriptionIdParams, SubscriptionSchema, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { present, subscriptionRef } from "../subscriptions/shared.ts";
import { AddressEntryInput, CHANGE_OPTIONS, PATH, TAGS } from "./shared.ts";

const PatchInput = InputObject({
  add: t.Optional(t.Array(AddressEntryInput, { description: "Entries to add (applied after the removals)." })),
  remove: t.Optional(t.Array(AddressEntryInput, { description: "Entries to remove." })),
});

const SkippedSchema = t.Object({
  input: AddressEntrySchema,
  reason: t.Union([t.Literal("not_found"), t.Literal("invalid_address"), t.Literal("invalid_chain"), t.Literal("chain_not_enabled")]),
  detail: t.Optional(t.String()),
});
type SkippedReason = Static<typeof SkippedSchema>["reason"];

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

// The top-level shape is checked before the schema so `param` names the field that is wrong (the schema's own first
// complaint about a non-array would point inside it).
function checkPatchShape(body: unknown): void {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalidRequest("The request body must be a JSON object with add and/or remove arrays.", "/");
  }
  for (const field of ["add", "remove"] as const) {
    const value = (body as Record<string, unknown>)[field];
    if (value !== undefined && !Array.isArray(value)) throw invalidRequest(`${field} must be an array of address entries.`, `/${field}`);
  }
}

function renderSkipped(s: SkippedAddress): { input: AddressJson; reason: SkippedReason; detail?: string } {
  const out: { input: AddressJson; reason: SkippedReason; detail?: string } = {
    input: { chainId: s.input?.chainId ?? "", address: s.input?.address ?? "" },
    reason: s.reason as SkippedReason,
  };
  if (s.detail) out.detail = s.detail;
  return out;
}

export const patchAddresses: Operation = {
  key: operationKey("patch", PATH),
  errors: [...BODY, "addresses_limit_exceeded", "quota_exceeded", "not_found"],
  examples: {
    request: { add: [WALLET], remove: [OTHER] },
    response: {
      "200": {
        subscription: exampleSubscription({ addresses: [WALLET], hasMore: false, updated: UPDATED }),
        results: {
          added: [WALLET],
          removed: [],
          skipped: [{ input: OTHER, reason: "not_found", detail: "This entry is not in the subscription's list." }],
        },
      },
    },
  },
  route: (deps) =>
    new Elysia({ name: patchAddresses.key }).patch(
      PATH,
      async ({ params, body, request }) => {
        const { keyId, id } = subscriptionRef(request, params.id);
        const add = body.add ?? [];
        const remove = body.remove ?? [];
        if (add.length === 0 && remove.length === 0) {
          throw invalidRequest("add or remove must list at least one address entry.", "/add");
        }
        const res = await rpc(() => deps.subscriptions.patchAddresses({ keyId, id, add, remove }, CHANGE_OPTIONS));
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
        response: { 200: PatchResultSchema, ...errorResponses(400, 401, 403, 404, 413, 415, 429, 503) },
        detail: {
          summary: "Add and remove watched addresses",
          description:
            "Removals apply before additions, all valid items in one transaction. Invalid items are skipped with their reason " +
            `(invalid_address, invalid_chain, chain_not_enabled; not_found for removing an absent entry). At most ${MAX_ADDRESSES_PER_REQUEST.toLocaleString("en-US")} entries ` +
            "per request; over a limit nothing is applied (addresses_limit_exceeded).",
          tags: TAGS,
          security: SECURITY,
        },
      },
    ),
};
