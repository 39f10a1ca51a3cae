// The error contract in one place: public codes, their HTTP statuses, and how they cross an RPC boundary.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../gen/webhooks/common/v1/error_pb.ts";

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

// The Connect code only matters to non-gateway RPC clients; the ErrorInfo detail carries the public code.
const CONNECT_CODE: Record<number, Code> = {
  400: Code.InvalidArgument,
  401: Code.Unauthenticated,
  404: Code.NotFound,
  405: Code.Unimplemented,
  409: Code.FailedPrecondition,
  413: Code.InvalidArgument,
  415: Code.InvalidArgument,
  429: Code.ResourceExhausted,
  500: Code.Internal,
  503: Code.Unavailable,
};

export function toConnectError(err: ApiError): ConnectError {
  const info = create(ErrorInfoSchema, {
    code: err.code,
    message: err.message,
    detailJson: err.detail === null ? "" : JSON.stringify(err.detail),
  });
  return new ConnectError(err.message, CONNECT_CODE[err.status] ?? Code.Unknown, undefined, [
    { desc: ErrorInfoSchema, value: info },
  ]);
}

/** Turns whatever an RPC call threw back into an ApiError (unknown failures become 503 or 500). */
export function fromRpcError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const ce = ConnectError.from(err);
  const [info] = ce.findDetails(ErrorInfoSchema);
  if (info && isErrorCode(info.code)) {
    return new ApiError(info.code, info.message, info.detailJson ? (JSON.parse(info.detailJson) as ErrorDetail) : null);
  }
  if (ce.code === Code.Unavailable || ce.code === Code.DeadlineExceeded || ce.code === Code.Aborted) {
    return new ApiError("service_unavailable", "A dependency is unavailable; nothing was changed. Try again shortly.");
  }
  return new ApiError("internal_error", "An unexpected error occurred.");
}
