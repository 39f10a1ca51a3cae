// One way to read an answer: its data, or the API's error (code, sentence, detail) as an exception.
import type { ErrorBody } from "./types.ts";

/** An answer other than 2xx: the API's error code and sentence, or the status and its text for a body that is not
 * the API's (a proxy's HTML error page, say). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly detail: unknown,
    readonly requestId: string | null,
  ) {
    super(message);
    this.name = "ApiError";
  }

  static from(response: Response, body: unknown): ApiError {
    const error = isErrorBody(body) ? body : undefined;
    return new ApiError(
      response.status,
      error?.error ?? String(response.status),
      error?.message ?? response.statusText,
      error?.detail ?? null,
      error?.requestId ?? response.headers.get("x-request-id"),
    );
  }
}

function isErrorBody(body: unknown): body is ErrorBody {
  return typeof body === "object" && body !== null && typeof (body as ErrorBody).error === "string" && typeof (body as ErrorBody).message === "string";
}

/** What a client method resolves to (openapi-fetch's result), as far as `unwrap` reads it. */
export type Result = { data?: unknown; error?: unknown; response: Response };

/** The data of a result's 2xx member: undefined for an answer without a body. */
export type DataOf<R> = R extends { data: infer D; error?: never } ? ([D] extends [never] ? undefined : D) : never;

/** The data of a 2xx answer; an ApiError otherwise. */
export async function unwrap<R extends Result>(call: Promise<R>): Promise<DataOf<R>> {
  const { data, error, response } = await call;
  if (!response.ok) throw ApiError.from(response, error);
  return data as DataOf<R>;
}
