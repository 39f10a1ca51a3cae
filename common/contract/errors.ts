// The error contract: public codes, their HTTP statuses, the error every service throws, and the constructors of
// the errors several places give. How an error crosses an RPC boundary is common/rpc-errors.ts.

export const ERROR_STATUS = {
  invalid_request: 400,
  ssrf_blocked: 400,
  unsupported_event: 400,
  description_too_long: 400,
  invalid_pagination_token: 400,
  invalid_address: 400,
  invalid_chain: 400,
  chain_not_enabled: 400,
  addresses_limit_exceeded: 400,
  unauthorized: 401,
  quota_exceeded: 403,
  not_found: 404,
  method_not_allowed: 405,
  idempotency_in_flight: 409,
  idempotency_conflict: 409,
  event_not_retryable: 409,
  subscription_disabled: 409,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  service_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export type ErrorDetail = Record<string, unknown> | null;

/** An error the caller is meant to see, with its public code and detail. */
export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly detail: ErrorDetail = null,
  ) {
    super(message);
    this.name = "ApiError";
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERROR_STATUS, value);
}

/** A resource that does not exist, or belongs to another key, or whose id is malformed: "No such <what>." */
export function notFound(what = "resource"): ApiError {
  return new ApiError("not_found", `No such ${what}.`);
}

/** A request the caller got wrong, `param` naming where: a JSON pointer into the body, or a parameter's name. */
export function invalidRequest(message: string, param: string): ApiError {
  return new ApiError("invalid_request", message, { param });
}

/** A fault of ours (a broken dependency, an impossible state): nothing about it is the caller's to know. */
export function internalError(): ApiError {
  return new ApiError("internal_error", "An unexpected error occurred.");
}

/** A dependency is down and nothing was done: the caller may simply try again. */
export function serviceUnavailable(message = "A dependency is unavailable; nothing was changed. Try again shortly."): ApiError {
  return new ApiError("service_unavailable", message);
}
