// POST /v1/subscriptions/:id/backfills: a job over past blocks (docs/CONTRACT.md "Backfills"). The registry checks
// and resolves the range; this maps JSON to its RPC.
import { Elysia, t } from "elysia";
import { principalOf } from "../../context.ts";
import { WRITE_RPC_OPTIONS, rpc } from "../../deps.ts";
import { OTHER, WALLET, exampleBackfill } from "../../docs-examples.ts";
import { idempotencyFor, replayHeaders } from "../../idempotency.ts";
import { IdempotencyHeaders, InputObject, SubscriptionIdParams, errorResponses } from "../../schemas.ts";
import { IsoTime as Time, parseTime } from "../events/time.ts";
import { SECURITY, operationKey, type Operation } from "../operation.ts";
import { subscriptionId } from "../subscriptions/shared.ts";
import { BackfillSchema, TAGS, backfillClient, renderBackfill } from "./shared.ts";

const PATH = "/v1/subscriptions/:id/backfills";

const BackfillInput = InputObject({
  chainId: t.String({ description: "tron:mainnet, tron:nile or tron:shasta (enabled for the key)." }),
  fromBlock: t.Optional(t.Integer({ minimum: 0, description: "First block; exactly one of fromBlock and since." })),
  since: t.Optional(Time("The first block at or after this time.")),
  toBlock: t.Optional(t.Integer({ minimum: 0, description: "Last block; default and cap: the solidified head when the job is created." })),
  until: t.Optional(Time("The last block at or before this time; at most one of toBlock and until.")),
  addresses: t.Optional(
    t.Array(t.String(), { description: "A subset of the subscription's addresses on the chain; default all of them." }),
  ),
});

export const createBackfill: Operation = {
  key: operationKey("post", PATH),
  examples: {
    request: { chainId: "tron:mainnet", since: "2026-11-21T03:00:00.000Z", addresses: [WALLET.address, OTHER.address] },
    response: { "202": exampleBackfill("queued", 0, 0) },
  },
  route: (deps) => {
  const client = backfillClient(deps);
  return new Elysia({ name: createBackfill.key }).post(
    PATH,
    async ({ params, body, request, set }) => {
      const { keyId } = principalOf(request);
      const id = subscriptionId(params.id);
      const idempotency = idempotencyFor(request, `/v1/subscriptions/${id}/backfills`);
      const res = await rpc(() =>
        client.createBackfill(
          {
            keyId,
            subscriptionId: id,
            chainId: body.chainId,
            fromBlock: body.fromBlock === undefined ? undefined : BigInt(body.fromBlock),
            sinceMs: body.since === undefined ? undefined : parseTime(body.since, "/since"),
            toBlock: body.toBlock === undefined ? undefined : BigInt(body.toBlock),
            untilMs: body.until === undefined ? undefined : parseTime(body.until, "/until"),
            addressesGiven: body.addresses !== undefined,
            addresses: body.addresses ?? [],
            idempotency,
          },
          WRITE_RPC_OPTIONS,
        ),
      );
      set.status = 202;
      Object.assign(set.headers, replayHeaders(res.idempotency));
      return renderBackfill(res.backfill);
    },
    {
      params: SubscriptionIdParams,
      body: BackfillInput,
      headers: IdempotencyHeaders,
      response: { 202: BackfillSchema, ...errorResponses(400, 401, 404, 409, 413, 415, 429, 503) },
      detail: {
        summary: "Backfill: deliver a range of past blocks' transfers as events",
        description:
          "Scans the chain's blocks from fromBlock (or the first at or after since) to toBlock (or the last at or before until; default and cap the solidified head now), " +
          "oldest first, for transfers touching the subscription's addresses on the chain (or the given subset) that pass its match conditions, and makes the events of the kinds it lists " +
          "exactly as the live streams make them for a solidified block, with data.backfill set to the job's id. An event the subscription already has for that (kind, transfer) is not made again (eventsSkipped). " +
          "At most BACKFILL_MAX_BLOCKS (864,000) blocks per job. 409 subscription_disabled on a disabled subscription. Idempotency-Key honoured.",
        tags: TAGS,
        security: SECURITY,
      },
    },
  );
},
};
