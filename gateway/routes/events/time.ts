// Times in event requests (recover's body, the search's query): ISO 8601 in, Unix ms to the deliverer.
import { t } from "elysia";
import { invalidRequest } from "../../../common/contract/index.ts";

export const IsoTime = (description: string) => t.String({ description: `${description} ISO 8601 time, e.g. 2026-11-22T02:26:03.123Z.` });

/** An ISO 8601 time of a request, as Unix ms; anything else is invalid_request at `param`. */
export function parseTime(value: string, param: string): bigint {
  const ms = /^\d{4}-\d{2}-\d{2}T/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) throw invalidRequest(`${param.replace(/^\//, "")} must be an ISO 8601 time.`, param);
  return BigInt(ms);
}
