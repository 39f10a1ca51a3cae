// X-Request-Id: a caller's own id is echoed when it is sane (so it can be traced across its systems), otherwise
// a fresh one is made. "Sane" keeps log lines and headers free of injection and of unbounded sizes.
import { randomUUID } from "node:crypto";

const SANE = /^[A-Za-z0-9._-]{1,128}$/;

export const REQUEST_ID_HEADER = "x-request-id";

export function pickRequestId(incoming: string | null): string {
  return incoming !== null && SANE.test(incoming) ? incoming : randomUUID();
}
