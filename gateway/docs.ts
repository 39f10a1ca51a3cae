// /openapi.json and /docs. The document is generated from the route schemas by @elysiajs/openapi's
// toOpenAPISchema; the interactive page is Swagger UI, whose scripts and styles come from the swagger-ui-dist
// package and are served here, so the page works with no internet access (the plugin's page loads them from a CDN).
import { dirname, join } from "node:path";
import { toOpenAPISchema, unwrapSchema } from "@elysiajs/openapi/openapi";
import { Elysia, type AnyElysia, type TSchema } from "elysia";
import { notFound } from "./errors.ts";

const OPENAPI_VERSION = "3.1.0";
const ASSET_BASE = "/docs/assets";
const SWAGGER_DIST = dirname(Bun.resolveSync("swagger-ui-dist/package.json", import.meta.dir));
const ASSETS: Record<string, string> = {
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui.css": "text/css; charset=utf-8",
  "favicon-32x32.png": "image/png",
};
// TypeBox marks optional schemas (an optional body) with this symbol.
const OPTIONAL = Symbol.for("TypeBox.Optional");

const INFO = {
  title: "TRON Webhooks API",
  version: "1.0.0",
  description:
    "Signed HTTPS webhooks for TRON transfers. Every /v1 request carries `Authorization: Bearer <API key>`. " +
    "Errors share one body: {error, message, detail, requestId}.",
};

const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>${INFO.title}</title>
  <link rel="icon" type="image/png" href="${ASSET_BASE}/favicon-32x32.png" />
  <link rel="stylesheet" href="${ASSET_BASE}/swagger-ui.css" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="${ASSET_BASE}/swagger-ui-bundle.js"></script>
  <script>
    window.onload = () => {
      window.ui = SwaggerUIBundle(${JSON.stringify({ url: "/openapi.json", dom_id: "#swagger-ui" })});
    };
  </script>
</body>
</html>
`;

interface Operation {
  requestBody?: { description?: string; required?: boolean; content?: Record<string, unknown> };
  responses?: Record<string, { description?: string; content?: Record<string, unknown> }>;
}

/**
 * The OpenAPI document of every route of `app` not marked hidden. Two corrections to the generator: request
 * bodies are JSON (the gateway's own body parser hides the media type from it) and required only when the schema
 * is not optional; a response without a body has no content.
 */
export function openApiDocument(app: AnyElysia): Record<string, unknown> {
  const { paths, components } = toOpenAPISchema(app, undefined, undefined, undefined, OPENAPI_VERSION) as {
    paths: Record<string, Record<string, Operation>>;
    components: { schemas: Record<string, unknown> };
  };
  for (const route of app.routes) {
    const op = paths[route.path.replace(/:(\w+)/g, "{$1}")]?.[route.method.toLowerCase()];
    if (!op) continue;
    const body = route.hooks?.body as TSchema | undefined;
    if (op.requestBody && body && typeof body === "object") {
      op.requestBody.content = { "application/json": { schema: unwrapSchema(body, undefined, "input", OPENAPI_VERSION) } };
      op.requestBody.required = !(OPTIONAL in body);
    }
    for (const [status, response] of Object.entries(op.responses ?? {})) {
      if (response.content && !Object.keys(response.content).some((k) => k.includes("/"))) {
        op.responses![status] = { description: response.description ?? "No body." };
      }
    }
  }
  return {
    openapi: OPENAPI_VERSION,
    info: INFO,
    tags: [
      { name: "subscriptions", description: "Webhook subscriptions" },
      { name: "address filters", description: "The TRON addresses a subscription watches" },
      { name: "events", description: "The delivery log: test, list, inspect and retry events" },
      { name: "operations", description: "Health, readiness and metrics (no authentication)" },
    ],
    paths,
    components: {
      schemas: components.schemas,
      securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "An API key: whk_..." } },
    },
  };
}

/** `app` is the whole gateway, read when the document is first asked for (every route is mounted by then). */
export function docsPlugin(app: () => AnyElysia) {
  let cached: { routes: number; doc: Record<string, unknown> } | undefined;
  return new Elysia({ name: "gateway-docs" })
    .get(
      "/openapi.json",
      () => {
        const gateway = app();
        if (cached?.routes !== gateway.routes.length) cached = { routes: gateway.routes.length, doc: openApiDocument(gateway) };
        return cached.doc;
      },
      { detail: { hide: true } },
    )
    .get("/docs", () => new Response(PAGE, { headers: { "content-type": "text/html; charset=utf-8" } }), {
      detail: { hide: true },
    })
    .get(
      `${ASSET_BASE}/:file`,
      ({ params }) => {
        const type = ASSETS[params.file];
        if (type === undefined) throw notFound();
        return new Response(Bun.file(join(SWAGGER_DIST, params.file)), {
          headers: { "content-type": type, "cache-control": "public, max-age=86400" },
        });
      },
      { detail: { hide: true } },
    );
}
