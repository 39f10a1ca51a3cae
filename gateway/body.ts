// Request bodies: JSON only, at most 1 MiB, read before any route sees them. An absent body is `null` (the routes
// whose body is optional accept it; the others answer invalid_request), so POSTs like rotate work with no body.
import { ApiError } from "../common/errors.ts";

export const MAX_BODY_BYTES = 1024 * 1024;

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

/** Reads and parses a request body per CONTRACT.md: 413 over 1 MiB, 415 without application/json, 400 if malformed. */
export async function parseJsonBody(request: Request): Promise<ParsedBody> {
  const bytes = await readCapped(request);
  if (bytes.byteLength > MAX_BODY_BYTES) throw tooLarge();
  if (bytes.byteLength === 0) return { value: null, present: false };
  if (!isJsonMediaType(request.headers.get("content-type"))) {
    throw new ApiError("unsupported_media_type", "Request bodies must be sent with Content-Type: application/json.");
  }
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new ApiError("invalid_request", "The request body is not valid JSON.", { param: "/" });
  }
  // Every body of this API is a JSON object (or, for an address list, an array): a bare string, number or
  // boolean is never one, whatever a route's schema would let through.
  if (value !== null && typeof value !== "object") {
    throw new ApiError("invalid_request", "The request body must be a JSON object.", { param: "/" });
  }
  return { value, present: value !== null };
}
