// /openapi.json and /docs. The document is generated from the route schemas by @elysiajs/openapi's
// toOpenAPISchema; the interactive page is Swagger UI, whose scripts and styles come from the swagger-ui-dist
// package and are served here, so the page works with no internet access (the plugin's page loads them from a CDN).
import { dirname, join } from "node:path";
import { toOpenAPISchema, unwrapSchema } from "@elysiajs/openapi/openapi";
import { Elysia, type AnyElysia, type TSchema } from "elysia";
import { errorResponsesFor } from "./docs-errors.ts";
import { PARAMETER_EXAMPLES } from "./docs-examples.ts";
import { plainSchema, webhooksSection, WEBHOOK_PAYLOAD_REFS, WEBHOOK_SCHEMAS, WEBHOOKS_TAG } from "./docs-webhooks.ts";
import { operationOf } from "./routes/index.ts";
import { ErrorBodySchema } from "./schemas.ts";
import { PAGE_LIMIT_DESCRIPTION } from "../common/page-token.ts";
import { DEFAULT_PAGE_LIMIT, notFound } from "../common/contract/index.ts";

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
    "Errors share one body: {error, message, detail, requestId}; each operation lists its error codes per status. " +
    "What your endpoint receives (one payload per event kind, the delivery headers, how to verify a signature) is " +
    "in the webhooks section.",
};

// Relative to the document's own address: "try it out" on /docs calls the gateway that served the page.
const SERVERS = [{ url: "/", description: "The gateway serving this document (npm start: http://localhost:3000)" }];
const ERROR_REF = "#/components/schemas/Error";
/** docs/CONTRACT.md "Limits": limit on every list. */
const PAGE_LIMIT = { type: "integer", default: DEFAULT_PAGE_LIMIT, minimum: 1, description: PAGE_LIMIT_DESCRIPTION };

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

interface MediaType {
  schema?: unknown;
  example?: unknown;
}

interface Operation {
  parameters?: { name: string; in: string; schema?: Record<string, unknown>; example?: unknown }[];
  requestBody?: { description?: string; required?: boolean; content?: Record<string, MediaType> };
  responses?: Record<string, { description?: string; content?: Record<string, MediaType> }>;
}

/**
 * What the generator cannot know: each error status's codes with the shared error schema and an example per code,
 * real request and response examples, and `limit`'s default.
 */
function enrich(key: string, op: Operation): void {
  for (const p of op.parameters ?? []) {
    // The generator shows the query's string-or-integer coercion with a default of 0; the contract's default is 50.
    if (p.in === "query" && p.name === "limit") p.schema = PAGE_LIMIT;
    const example = PARAMETER_EXAMPLES[p.name];
    if (example !== undefined) p.example = example;
  }
  const operation = operationOf(key);
  const examples = operation?.examples;
  const requestJson = op.requestBody?.content?.["application/json"];
  if (requestJson && examples?.request !== undefined) requestJson.example = examples.request;
  const responses = (op.responses ??= {});
  const declaredErrors: number[] = [];
  for (const [status, response] of Object.entries(responses)) {
    const code = Number(status);
    if (code >= 400 && key.includes(" /v1/")) {
      declaredErrors.push(code);
      delete responses[status];
      continue;
    }
    const json = response.content?.["application/json"];
    const example = examples?.response?.[status];
    if (json && example !== undefined) json.example = example;
  }
  if (key.includes(" /v1/")) Object.assign(responses, errorResponsesFor(operation?.errors, ERROR_REF, declaredErrors));
}

/** The event log's `payload` is one of the webhook payloads: point every EventView at their schemas. */
function linkEventPayloads(node: unknown): void {
  if (!node || typeof node !== "object") return;
  const schema = node as { title?: unknown; properties?: Record<string, unknown> };
  if (schema.title === "EventView" && schema.properties?.payload) {
    schema.properties.payload = { description: "The webhook payload, as delivered.", oneOf: WEBHOOK_PAYLOAD_REFS };
  }
  for (const child of Object.values(node)) linkEventPayloads(child);
}

/**
 * Elysia's t.Integer is "an integer, or a string of one" so that query strings coerce; what the service sends (its
 * answers, the webhook payloads) always holds the integer, so those say integer. A copy: `node` is left as it is.
 */
function integersAsSent(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(integersAsSent);
  if (!node || typeof node !== "object") return node;
  const schema = node as Record<string, unknown>;
  const members = schema.anyOf as Record<string, unknown>[] | undefined;
  const integer = members?.length === 2 && members.some((m) => m.type === "string" && m.format === "integer") ? members.find((m) => m.type === "integer") : undefined;
  if (integer) {
    const { anyOf: _coercion, ...rest } = schema;
    return { ...integer, ...rest };
  }
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, integersAsSent(v)]));
}

/**
 * Elysia writes additionalProperties: false into a schema when it compiles a route's validator (at the route's first
 * request), and the schemas are shared by every app in the process: without this the document would depend on which
 * routes had been called. No schema here sets it (inputs set true), so every such mark is the validator's. A copy.
 */
function withoutValidatorMarks(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutValidatorMarks);
  if (!node || typeof node !== "object") return node;
  return Object.fromEntries(
    Object.entries(node).filter(([k, v]) => !(k === "additionalProperties" && v === false)).map(([k, v]) => [k, withoutValidatorMarks(v)]),
  );
}

/**
 * The OpenAPI document of every route of `app` not marked hidden. Two corrections to the generator: request
 * bodies are JSON (the gateway's own body parser hides the media type from it) and required only when the schema
 * is not optional; a response without a body has no content. Then what the routes' schemas do not say (enrich),
 * and the webhooks section: what a customer's endpoint receives.
 */
export function openApiDocument(app: AnyElysia): Record<string, unknown> {
  const generated = toOpenAPISchema(app, undefined, undefined, undefined, OPENAPI_VERSION);
  // A copy: the document is edited below and must never share an object with the schemas the routes validate with.
  const { paths, components } = JSON.parse(JSON.stringify(generated)) as {
    paths: Record<string, Record<string, Operation>>;
    components: { schemas: Record<string, unknown> };
  };
  for (const route of app.routes) {
    const path = route.path.replace(/:(\w+)/g, "{$1}");
    const method = route.method.toLowerCase();
    const op = paths[path]?.[method];
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
    enrich(`${method} ${path}`, op);
    if (op.responses) op.responses = integersAsSent(op.responses) as Operation["responses"];
  }
  linkEventPayloads(paths);
  return {
    openapi: OPENAPI_VERSION,
    info: INFO,
    servers: SERVERS,
    tags: [
      { name: "subscriptions", description: "Webhook subscriptions" },
      { name: "address filters", description: "The TRON addresses a subscription watches" },
      { name: "events", description: "The delivery log: test, list, inspect and retry events" },
      { name: "backfills", description: "History on demand: past blocks' transfers delivered as the same events" },
      { name: "operations", description: "Health, readiness and metrics (no authentication)" },
      WEBHOOKS_TAG,
    ],
    paths: withoutValidatorMarks(paths),
    webhooks: integersAsSent(webhooksSection()),
    components: {
      schemas: withoutValidatorMarks({ ...components.schemas, Error: plainSchema(ErrorBodySchema), ...(integersAsSent(WEBHOOK_SCHEMAS) as typeof WEBHOOK_SCHEMAS) }),
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
