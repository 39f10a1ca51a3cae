// GET /v1/subscriptions/:id/filters/addresses: the watched addresses in order of addition, a page at a time.
import { Elysia, t } from "elysia";
import { queryPageLimit } from "../../../common/page-token.ts";
import { RPC_OPTIONS, rpc } from "../../deps.ts";
import { PAGE } from "../../docs-errors.ts";
import { OTHER, WALLET } from "../../docs-examples.ts";
import { renderAddress } from "../../render.ts";
import { AddressEntrySchema, PageQuery, SubscriptionIdParams, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { subscriptionRef } from "../subscriptions/shared.ts";
import { PATH, TAGS } from "./shared.ts";

const AddressPageSchema = t.Object(
  {
    items: t.Array(AddressEntrySchema),
    nextPageToken: t.Union([t.String(), t.Null()], { description: "null on the last page." }),
  },
  { title: "AddressPage" },
);

export const listAddresses: Operation = {
  key: operationKey("get", PATH),
  errors: [...PAGE, "not_found"],
  examples: { response: { "200": { items: [WALLET, OTHER], nextPageToken: null } } },
  route: (deps) =>
    new Elysia({ name: listAddresses.key }).get(
      PATH,
      async ({ params, query, request }) => {
        const { keyId, id } = subscriptionRef(request, params.id);
        const res = await rpc(() =>
          deps.subscriptions.listAddresses(
            { keyId, id, limit: queryPageLimit(query.limit), pageToken: query.nextPageToken ?? "" },
            RPC_OPTIONS,
          ),
        );
        return { items: res.items.map(renderAddress), nextPageToken: res.nextPageToken === "" ? null : res.nextPageToken };
      },
      {
        params: SubscriptionIdParams,
        query: PageQuery,
        response: { 200: AddressPageSchema, ...errorResponses(400, 401, 404, 429, 503) },
        detail: { summary: "List watched addresses in order of addition", tags: TAGS, security: SECURITY },
      },
    ),
};
