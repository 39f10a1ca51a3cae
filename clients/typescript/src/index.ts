// The TRON Webhooks API client: openapi-fetch over the types openapi-typescript generated from the gateway's
// OpenAPI document (src/schema.ts), so a call the API does not define, or a field it does not have, fails to compile.
import createFetchClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { paths } from "./schema.ts";

export type { components, operations, paths, webhooks } from "./schema.ts";
export type * from "./types.ts";
export { ApiError, unwrap } from "./errors.ts";

export type TronWebhooksClient = Client<paths>;

export interface TronWebhooksClientOptions extends ClientOptions {
  /**
   * The API key (whk_…) sent as `Authorization: Bearer`, or a function read on every request (a key that changes,
   * as in a browser tab that signs in and out). Nothing is sent when it gives null or undefined.
   */
  apiKey?: string | (() => string | null | undefined);
}

/** A client of the /v1 API; `baseUrl` is the gateway's origin (leave it out in a page the gateway serves). */
export function createTronWebhooksClient(options: TronWebhooksClientOptions = {}): TronWebhooksClient {
  const { apiKey, ...rest } = options;
  const client = createFetchClient<paths>(rest);
  if (apiKey !== undefined) {
    client.use({
      onRequest({ request }) {
        const key = typeof apiKey === "function" ? apiKey() : apiKey;
        if (key !== null && key !== undefined) request.headers.set("authorization", `Bearer ${key}`);
        return request;
      },
    });
  }
  return client;
}
