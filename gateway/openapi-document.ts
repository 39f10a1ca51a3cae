// The OpenAPI document without a running service: the gateway app is built with dependencies it never calls (it
// serves no request), so `npm run generate` and the client's freshness test need no database, Redis or registry.
import { createRouterTransport } from "@connectrpc/connect";
import { loadConfig } from "../common/config.ts";
import { openRedis } from "../common/redis.ts";
import { createGatewayApp } from "./app.ts";
import { openApiDocument } from "./docs.ts";

/** The document GET /openapi.json serves. */
export function buildOpenApiDocument(): Record<string, unknown> {
  const unused = createRouterTransport(() => {});
  // lazyConnect: no command is sent, so the client never opens a connection.
  const redis = openRedis("redis://127.0.0.1:6379", { lazyConnect: true });
  try {
    const app = createGatewayApp({ config: loadConfig({}), registry: unused, deliverer: unused, redis });
    return openApiDocument(app);
  } finally {
    redis.disconnect();
  }
}
