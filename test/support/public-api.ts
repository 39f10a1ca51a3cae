// The public API in front of a delivery bed, used as a customer uses it: the real gateway over the bed's registry
// and deliverer, called through the generated client (clients/typescript). The end-to-end tests subscribe, watch
// and read events this way, so an API change the client does not follow fails them.
import { createClient } from "@connectrpc/connect";
import { loadConfig } from "../../common/config.ts";
import { inProcessTransport } from "../../common/rpc.ts";
import { createGatewayApp } from "../../gateway/app.ts";
import { ApiKeyService } from "../../gen/webhooks/registry/v1/registry_pb.ts";
import { createTronWebhooksClient, unwrap, type EventView, type TronWebhooksClient } from "../../clients/typescript/src/index.ts";
import type { DeliveryBed } from "./delivery.ts";

/** A subscription made through the API, with the key that owns it. */
export interface ApiSubscription {
  keyId: string;
  /** The API key (whk_…) its calls carry. */
  key: string;
  subscriptionId: string;
}

export interface PublicApi {
  baseUrl: string;
  /** The generated client, calling with `key`. */
  client(key: string): TronWebhooksClient;
  /**
   * A new key (with `chains`; keys are issued by the operator, not the API) and, through the API, a subscription to
   * the receiver's `path`, whose secret the receiver then verifies with.
   */
  subscribe(path: string, opts?: { chains?: string[]; status?: "enabled" | "disabled"; events?: string[] }): Promise<ApiSubscription>;
  /** Adds addresses to watch; fails when the API skips any. */
  watch(sub: ApiSubscription, chainId: string, addresses: string[]): Promise<void>;
  /** Every event of the subscription, all pages. */
  events(sub: ApiSubscription): Promise<EventView[]>;
  stop(): Promise<void>;
}

export function servePublicApi(bed: DeliveryBed): PublicApi {
  const config = loadConfig({
    ...bed.env,
    PORT: "0",
    RATE_LIMIT_RPS: "100000",
    RATE_LIMIT_BURST: "100000",
    UNKNOWN_KEY_RATE_LIMIT_RPS: "100000",
    UNKNOWN_KEY_RATE_LIMIT_BURST: "100000",
  });
  const gateway = createGatewayApp({
    config,
    registry: inProcessTransport(bed.registry.routes, "gateway"),
    deliverer: bed.deliverer ? inProcessTransport(bed.deliverer.routes, "gateway") : undefined,
  });
  gateway.listen({ port: 0, hostname: "127.0.0.1" });
  const baseUrl = `http://127.0.0.1:${gateway.server?.port ?? 0}`;
  const keys = createClient(ApiKeyService, inProcessTransport(bed.registry.routes, "operator"));
  const client = (key: string) => createTronWebhooksClient({ baseUrl, apiKey: key });
  return {
    baseUrl,
    client,
    async subscribe(path, opts = {}) {
      const issued = await keys.createApiKey({ name: "api-test", chains: opts.chains ?? [] });
      if (!issued.key) throw new Error("CreateApiKey answered without a key");
      const sub = await unwrap(
        client(issued.secret).POST("/v1/subscriptions", {
          body: {
            destination: { type: "https", url: bed.receiver.url(path) },
            events: opts.events ?? ["wallet.transfer.broadcasted"],
            ...(opts.status ? { status: opts.status } : {}),
          },
        }),
      );
      bed.receiver.setSecrets(path, [sub.destination.secret ?? ""]);
      return { keyId: issued.key.id, key: issued.secret, subscriptionId: sub.id };
    },
    async watch(sub, chainId, addresses) {
      const res = await unwrap(
        client(sub.key).PATCH("/v1/subscriptions/{id}/filters/addresses", {
          params: { path: { id: sub.subscriptionId } },
          body: { add: addresses.map((address) => ({ chainId, address })) },
        }),
      );
      if (res.results.skipped.length > 0) throw new Error(`addresses skipped: ${JSON.stringify(res.results.skipped)}`);
    },
    async events(sub) {
      const api = client(sub.key);
      const out: EventView[] = [];
      let nextPageToken: string | undefined;
      do {
        const page = await unwrap(
          api.GET("/v1/subscriptions/{id}/events", {
            params: { path: { id: sub.subscriptionId }, query: { limit: 200, ...(nextPageToken ? { nextPageToken } : {}) } },
          }),
        );
        out.push(...page.items);
        nextPageToken = page.nextPageToken ?? undefined;
      } while (nextPageToken);
      return out;
    },
    async stop() {
      await gateway.stop(true);
    },
  };
}
