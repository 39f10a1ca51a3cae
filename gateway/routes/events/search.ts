// GET /v1/events: the event search across all of the key's subscriptions, newest first.
import { Elysia, t } from "elysia";
import { BROADCASTED, CHAIN_CHOICES, CONFIRMED, EVENT_KINDS, orList } from "../../../common/contract/index.ts";
import { checkEventSearchFilters, SEARCH_REFS_PER_REQUEST } from "../../../common/event-search.ts";
import { queryPageLimit } from "../../../common/page-token.ts";
import { principalOf } from "../../context.ts";
import { RPC_OPTIONS, rpc } from "../../deps.ts";
import { exampleEventView } from "../../docs-examples.ts";
import { InputObject, PageQuery, errorResponses } from "../../schemas.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { subscriptionId } from "../subscriptions/shared.ts";
import { deliveryAccess } from "./access.ts";
import { IsoTime, parseTime } from "./time.ts";
import { EventPageSchema, TAGS, eventPageJson, jsonResponse } from "./view.ts";

const PATH = "/v1/events";

const SearchQuery = InputObject({
  txId: t.Optional(t.String({ description: "Transaction id, 64 hex digits (another form is invalid_request)." })),
  address: t.Optional(t.String({
    description:
      "A base58check TRON address, as a transfer's sender or receiver, or an address an activity matched or names (an approval's owner or spender, " +
      "the permission's account, a delegation's receiver, the blacklisted user); another form is invalid_address.",
  })),
  chainId: t.Optional(t.String({ description: `${CHAIN_CHOICES}.` })),
  kind: t.Optional(t.String({ description: `Event kind: ${orList(EVENT_KINDS)} (another is invalid_request).` })),
  status: t.Optional(t.Union([t.Literal("pending"), t.Literal("delivered"), t.Literal("failed")])),
  subscriptionId: t.Optional(t.String({ description: "Only this subscription's events (another key's is not_found)." })),
  since: t.Optional(IsoTime("Created at or after.")),
  until: t.Optional(IsoTime("Created before; after since when both are given.")),
  limit: PageQuery.properties.limit,
  nextPageToken: PageQuery.properties.nextPageToken,
});

export const searchEvents: Operation = {
  key: operationKey("get", PATH),
  examples: {
    response: { "200": { items: [exampleEventView(CONFIRMED, "delivered"), exampleEventView(BROADCASTED, "delivered")] } },
  },
  route: (deps) => {
    const { delivery, owned } = deliveryAccess(deps);
    return new Elysia({ name: searchEvents.key }).get(
      PATH,
      async ({ query, request }) => {
        const { keyId } = principalOf(request);
        // Checked here too, before the ownership lookup: a malformed filter costs no RPC.
        const { txId, address } = checkEventSearchFilters({ txId: query.txId ?? "", address: query.address ?? "" });
        let sub = "";
        if (query.subscriptionId !== undefined && query.subscriptionId !== "") {
          sub = (await owned(request, subscriptionId(query.subscriptionId))).subscriptionId;
        }
        const res = await rpc(() =>
          delivery().searchEvents(
            {
              keyId,
              subscriptionId: sub,
              txId,
              address,
              chainId: query.chainId ?? "",
              kind: query.kind ?? "",
              status: query.status ?? "",
              sinceMs: query.since === undefined ? undefined : parseTime(query.since, "since"),
              untilMs: query.until === undefined ? undefined : parseTime(query.until, "until"),
              limit: queryPageLimit(query.limit),
              pageToken: query.nextPageToken ?? "",
            },
            RPC_OPTIONS,
          ),
        );
        return jsonResponse(eventPageJson(res.items, res.nextPageToken));
      },
      {
        query: SearchQuery,
        response: { 200: EventPageSchema, ...errorResponses(400, 401, 404, 429, 503) },
        detail: {
          summary: "Search events across all of the key's subscriptions, newest first",
          description:
            "Every filter is optional and served by an index; a page token belongs to its filter set. With an address or a txId, a request " +
            `reads at most ${SEARCH_REFS_PER_REQUEST.toLocaleString("en-US")} of its events before answering: when the other filters leave out most of them, a page may ` +
            "hold fewer than limit events (even none) and still carry a nextPageToken; only the last page has none.",
          tags: TAGS,
          security: SECURITY,
        },
      },
    );
  },
};
