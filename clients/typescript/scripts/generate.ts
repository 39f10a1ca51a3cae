// `npm run generate` (with buf): the client's generated files from the gateway's OpenAPI document, built offline.
// openapi.json is the document as GET /openapi.json serves it; src/schema.ts is openapi-typescript's output for
// it. `bun clients/typescript/scripts/generate.ts DIR` writes them under DIR instead (the freshness test does).
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from "openapi-typescript";
import { buildOpenApiDocument } from "../../../gateway/openapi-document.ts";

const PACKAGE = resolve(import.meta.dir, "..");

/** Each generated file's path in the package and its text. */
export async function generatedFiles(): Promise<Record<string, string>> {
  const document = buildOpenApiDocument();
  const ast = await openapiTS(document as unknown as OpenAPI3, { silent: true });
  return {
    "openapi.json": `${JSON.stringify(document, null, 2)}\n`,
    "src/schema.ts": `${COMMENT_HEADER}${astToString(ast)}`,
  };
}

if (import.meta.main) {
  const out = resolve(process.argv[2] ?? PACKAGE);
  for (const [path, text] of Object.entries(await generatedFiles())) {
    mkdirSync(dirname(join(out, path)), { recursive: true });
    writeFileSync(join(out, path), text);
  }
}
