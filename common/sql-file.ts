// Raw statements live in .sql files beside the module that runs them, read once when the module loads. Their values
// are always bound ($1, $2… with the driver's parameters), never written into the text.
import { readFileSync } from "node:fs";

/** The statement in the file at `url` (resolve it from the module: new URL("./x.sql", import.meta.url)). */
export function sqlFile(url: URL): string {
  return readFileSync(url, "utf8").trim();
}
