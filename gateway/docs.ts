// /openapi.json and /docs. The document is generated from the route schemas by @elysiajs/openapi; the page's
// Swagger UI scripts and styles come from the swagger-ui-dist package and are served here, so the page works
// with no internet access (the plugin would load them from a CDN by default).
import { dirname, join } from "node:path";
import { Elysia } from "elysia";
import { openapi } from "@elysiajs/openapi";
import { notFound } from "./errors.ts";

const ASSET_BASE = "/docs/assets";
const SWAGGER_DIST = dirname(Bun.resolveSync("swagger-ui-dist/package.json", import.meta.dir));
const ASSETS: Record<string, string> = {
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui.css": "text/css; charset=utf-8",
  "favicon-32x32.png": "image/png",
};

export function docsPlugin(version = "1.0.0") {
  return new Elysia({ name: "gateway-docs" })
    .use(
      openapi({
        path: "/docs",
        specPath: "/openapi.json",
        provider: "swagger-ui",
        // The plugin points the page at "openapi.json" relative to it, which breaks at /docs/; the absolute path
        // works from both (the plugin's option type omits `url`, its renderer takes it).
        swagger: Object.assign(
          { cdn: `${ASSET_BASE}/swagger-ui-bundle.js`, theme: `${ASSET_BASE}/swagger-ui.css`, autoDarkMode: false },
          { url: "/openapi.json" },
        ),
        documentation: {
          info: {
            title: "TRON Webhooks API",
            version,
            description:
              "Signed HTTPS webhooks for TRON transfers. Every /v1 request carries `Authorization: Bearer <API key>`. " +
              "Errors share one body: {error, message, detail, requestId}.",
          },
          tags: [
            { name: "subscriptions", description: "Webhook subscriptions" },
            { name: "operations", description: "Health, readiness and metrics (no authentication)" },
          ],
          components: {
            securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "An API key: whk_..." } },
          },
        },
      }),
    )
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
