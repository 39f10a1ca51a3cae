// A small HTTP client for API tests: raw status, headers and text, JSON parsed on demand, and one assertion of
// the error contract (exact body keys, requestId equal to the X-Request-Id header).
import { expect } from "bun:test";
import type { ErrorBody } from "../../gateway/errors.ts";

export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  json<T>(): T;
}

export interface RequestOptions {
  /** A value to send as JSON, or a string sent as is. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Leave out the Authorization header (default: send the client's key). */
  anonymous?: boolean;
}

export interface ApiClient {
  request(method: string, path: string, opts?: RequestOptions): Promise<ApiResponse>;
  get(path: string, opts?: RequestOptions): Promise<ApiResponse>;
  post(path: string, body?: unknown, opts?: RequestOptions): Promise<ApiResponse>;
  put(path: string, body?: unknown, opts?: RequestOptions): Promise<ApiResponse>;
  delete(path: string, opts?: RequestOptions): Promise<ApiResponse>;
}

export function apiClient(baseUrl: string, key?: string): ApiClient {
  const request = async (method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse> => {
    const headers: Record<string, string> = {};
    if (key && !opts.anonymous) headers.authorization = `Bearer ${key}`;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
      headers["content-type"] = "application/json";
    }
    Object.assign(headers, opts.headers);
    for (const [k, v] of Object.entries(headers)) if (v === "") delete headers[k];
    const res = await fetch(baseUrl + path, { method, headers, body });
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      text,
      json<T>() {
        return JSON.parse(text) as T;
      },
    };
  };
  return {
    request,
    get: (path, opts) => request("GET", path, opts),
    post: (path, body, opts) => request("POST", path, { ...opts, body }),
    put: (path, body, opts) => request("PUT", path, { ...opts, body }),
    delete: (path, opts) => request("DELETE", path, opts),
  };
}

/** Asserts the error contract: status, code, the exact four keys, requestId = X-Request-Id; returns the body. */
export function expectError(res: ApiResponse, status: number, code: string, detail?: Record<string, unknown> | null): ErrorBody {
  // Status and body together, so a mismatch shows what came back.
  expect(`${res.status} ${res.text}`).toStartWith(`${status} `);
  const body = res.json<ErrorBody>();
  expect(Object.keys(body).sort()).toEqual(["detail", "error", "message", "requestId"]);
  expect(body.error).toBe(code);
  expect(typeof body.message).toBe("string");
  expect(body.message.length).toBeGreaterThan(0);
  expect(body.requestId).toBe(res.headers.get("x-request-id") ?? "missing header");
  expect(res.headers.get("content-type")).toStartWith("application/json");
  if (detail !== undefined) expect(body.detail).toEqual(detail);
  return body;
}

/** Asserts a status, showing the body when it differs. */
export function expectStatus(res: ApiResponse, status: number): void {
  expect(`${res.status} ${res.text}`).toStartWith(`${status} `);
}

/** An HTTPS destination's URL (undefined for a queue destination). */
export function urlOf(sub: { destination: object }): string | undefined {
  return (sub.destination as { url?: string }).url;
}
