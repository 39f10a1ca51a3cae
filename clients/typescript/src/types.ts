// Names for the API's objects, read from the generated paths (the gateway's schemas are inline, not components).
import type { components, paths } from "./schema.ts";

type Method = "get" | "put" | "post" | "delete" | "patch";
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;

/** The JSON body of an operation's answer with `status`. */
export type ResponseBody<P extends keyof paths, M extends Method, S extends number = 200> =
  Operation<P, M> extends { responses: { [K in S]: { content: { "application/json": infer T } } } } ? T : never;

/** The JSON request body of an operation. */
export type RequestBody<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { requestBody?: { content: { "application/json": infer T } } } ? T : never;

/** The query parameters of an operation. */
export type QueryParams<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

export type ErrorBody = components["schemas"]["Error"];
export type Subscription = ResponseBody<"/v1/subscriptions/{id}", "get">;
export type SubscriptionPage = ResponseBody<"/v1/subscriptions", "get">;
export type NewSubscription = RequestBody<"/v1/subscriptions", "post">;
export type SubscriptionReplacement = RequestBody<"/v1/subscriptions/{id}", "put">;
/** A destination as the API returns it (`secret` only after create and rotate). */
export type Destination = Subscription["destination"];
/** A destination as a request gives it. */
export type DestinationInput = NewSubscription["destination"];
export type AddressPage = ResponseBody<"/v1/subscriptions/{id}/filters/addresses", "get">;
export type WatchedAddress = AddressPage["items"][number];
export type AddressPatch = RequestBody<"/v1/subscriptions/{id}/filters/addresses", "patch">;
export type AddressPatchResult = ResponseBody<"/v1/subscriptions/{id}/filters/addresses", "patch">;
export type EventView = ResponseBody<"/v1/subscriptions/{id}/events/{eventId}", "get">;
export type EventPage = ResponseBody<"/v1/events", "get">;
export type EventQuery = QueryParams<"/v1/events", "get">;
export type Attempt = ResponseBody<"/v1/subscriptions/{id}/events/{eventId}/attempts", "get">["items"][number];
export type Health = ResponseBody<"/v1/subscriptions/{id}/health", "get">;
export type RecoverRequest = RequestBody<"/v1/subscriptions/{id}/events/recover", "post">;
export type RecoverResult = ResponseBody<"/v1/subscriptions/{id}/events/recover", "post">;
export type Backfill = ResponseBody<"/v1/subscriptions/{id}/backfills/{backfillId}", "get">;
export type BackfillPage = ResponseBody<"/v1/subscriptions/{id}/backfills", "get">;
export type NewBackfill = RequestBody<"/v1/subscriptions/{id}/backfills", "post">;
