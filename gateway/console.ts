// /console: the operations console in the browser. Its TypeScript (console/) is bundled by Bun.build the first time
// it is asked for and kept in memory; the page, script and styles are served here, never from a CDN. The console
// talks only to the public /v1 API with the API key the user types in (kept in the tab's sessionStorage).
import { join } from "node:path";
import { Elysia } from "elysia";
import { notFound } from "../common/contract/index.ts";

const SOURCE = join(import.meta.dir, "..", "console");

const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>TRON Webhooks console</title>
  <link rel="stylesheet" href="/console/console.css" />
</head>
<body>
  <header>
    <strong>TRON Webhooks</strong>
    <nav id="nav" aria-label="Main" hidden>
      <a href="#/subscriptions">Subscriptions</a>
      <a href="#/events">Events</a>
      <a href="/docs">API docs</a>
      <button type="button" id="sign-out" class="small">Sign out</button>
    </nav>
  </header>
  <div id="messages" aria-live="polite"></div>
  <main id="main" tabindex="-1"></main>
  <script type="module" src="/console/console.js"></script>
</body>
</html>
`;

let bundle: Promise<string> | undefined;

/** The console's script, bundled once per process. */
export function consoleBundle(): Promise<string> {
  bundle ??= (async () => {
    const out = await Bun.build({ entrypoints: [join(SOURCE, "main.ts")], target: "browser", minify: true, format: "esm" });
    if (!out.success || !out.outputs[0]) {
      bundle = undefined;
      throw new Error(`console bundle failed: ${out.logs.map(String).join("; ")}`);
    }
    return out.outputs[0].text();
  })();
  return bundle;
}

// The page runs only its own script and styles and talks only to this origin.
const SECURITY_HEADERS = {
  "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

export function consolePlugin() {
  const html = () => new Response(PAGE, { headers: { "content-type": "text/html; charset=utf-8", ...SECURITY_HEADERS } });
  return new Elysia({ name: "gateway-console" })
    .get("/console", html, { detail: { hide: true } })
    .get("/console/", html, { detail: { hide: true } })
    .get(
      "/console/:file",
      async ({ params }) => {
        if (params.file === "console.js") {
          return new Response(await consoleBundle(), { headers: { "content-type": "text/javascript; charset=utf-8", ...SECURITY_HEADERS } });
        }
        if (params.file === "console.css") {
          return new Response(Bun.file(join(SOURCE, "console.css")), { headers: { "content-type": "text/css; charset=utf-8", ...SECURITY_HEADERS } });
        }
        throw notFound();
      },
      { detail: { hide: true } },
    );
}
