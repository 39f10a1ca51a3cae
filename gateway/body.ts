// Request bodies: JSON only, at most 1 MiB, read before any route sees them. An absent body is `null` (the routes
// whose body is optional accept it; the others answer invalid_request), so POSTs like rotate work with no body.
import { ApiError, invalidRequest, MAX_BODY_BYTES } from "../common/contract/index.ts";

/** Deepest nesting of arrays and objects a body may have; no request of this API needs more than a few levels. */
export const MAX_JSON_DEPTH = 32;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * Whether the raw JSON nests deeper than `max`, by one pass over the bytes counting brackets outside strings. Runs
 * before parsing and validating, whose cost (and recursion) grows with depth: a 40 KB body of nested arrays must
 * cost what 40 KB costs, not stall the process. Malformed JSON may be miscounted here; the parser refuses it next.
 */
export function nestsDeeperThan(bytes: Uint8Array, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) {
      inString = true;
    } else if (b === OPEN_ARRAY || b === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (b === CLOSE_ARRAY || b === CLOSE_OBJECT) {
      depth--;
    }
  }
  return false;
}

/**
 * The JSON pointer of the first string (member name or value) holding a NUL, or null. PostgreSQL text cannot store
 * NUL and no field of this API means one, so any NUL is the caller's error, named by where it is.
 */
export function findNul(value: unknown, pointer = ""): string | null {
  if (typeof value === "string") return value.includes("\u0000") ? pointer || "/" : null;
  if (value === null || typeof value !== "object") return null;
  const entries: [string, unknown][] = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  for (const [k, v] of entries) {
    const here = `${pointer}/${k.replace(/~/g, "~0").replace(/\//g, "~1")}`;
    if (k.includes("\u0000")) return here;
    const found = findNul(v, here);
    if (found !== null) return found;
  }
  return null;
}

function tooLarge(): ApiError {
  return new ApiError("payload_too_large", `The request body exceeds ${MAX_BODY_BYTES} bytes.`, { limit: MAX_BODY_BYTES });
}

function isJsonMediaType(contentType: string | null): boolean {
  if (contentType === null) return false;
  const semi = contentType.indexOf(";");
  const media = (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  return media === "application/json";
}

async function readCapped(request: Request): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null) {
    const n = Number(declared);
    if (n > MAX_BODY_BYTES) throw tooLarge();
    if (n === 0) return new Uint8Array(0);
    return new Uint8Array(await request.arrayBuffer());
  }
  // No declared length (chunked): stop reading as soon as the cap is passed.
  if (!request.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > MAX_BODY_BYTES) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

export interface ParsedBody {
  /** The parsed JSON, or null for an absent body. */
  value: unknown;
  present: boolean;
}

/** Reads and parses a request body per docs/CONTRACT.md: 413 over 1 MiB, 415 without application/json, 400 if malformed. */
export async function parseJsonBody(request: Request): Promise<ParsedBody> {
  const bytes = await readCapped(request);
  if (bytes.byteLength > MAX_BODY_BYTES) throw tooLarge();
  if (bytes.byteLength === 0) return { value: null, present: false };
  if (!isJsonMediaType(request.headers.get("content-type"))) {
    throw new ApiError("unsupported_media_type", "Request bodies must be sent with Content-Type: application/json.");
  }
  if (nestsDeeperThan(bytes, MAX_JSON_DEPTH)) {
    throw new ApiError("invalid_request", `The request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`, {
      param: "/",
      maxDepth: MAX_JSON_DEPTH,
    });
  }
  let text: string;
  let value: unknown;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    value = JSON.parse(text);
  } catch {
    throw invalidRequest("The request body is not valid JSON.", "/");
  }
  // JSON can carry NUL only as the escape \u0000, so only a body containing one is walked (bounded by the depth).
  if (/\\u0000/.test(text)) {
    const param = findNul(value);
    if (param !== null) throw invalidRequest(`The field ${param} contains a NUL character.`, param);
  }
  // Every body of this API is a JSON object (or, for an address list, an array): a bare string, number or
  // boolean is never one, whatever a route's schema would let through.
  if (value !== null && typeof value !== "object") {
    throw invalidRequest("The request body must be a JSON object.", "/");
  }
  return { value, present: value !== null };
}
