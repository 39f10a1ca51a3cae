// How the error contract crosses an RPC boundary: the public code rides in an ErrorInfo detail, and whatever a call
// throws comes back as the ApiError it stood for.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../gen/webhooks/common/v1/error_pb.ts";
import { ApiError, internalError, isErrorCode, serviceUnavailable, type ErrorDetail } from "./contract/index.ts";

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
  const code = err.code === "quota_exceeded" ? Code.ResourceExhausted : (CONNECT_CODE[err.status] ?? Code.Unknown);
  return new ConnectError(err.message, code, undefined, [
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
    return serviceUnavailable();
  }
  return internalError();
}
