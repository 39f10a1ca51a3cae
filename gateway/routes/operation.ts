// One operation of the public API per file under gateway/routes/<resource>/: its route (handler and schemas), the
// error codes it can answer and its examples, which the OpenAPI document (gateway/docs.ts) reads from here.
import type { AnyElysia } from "elysia";
import type { ErrorCode } from "../../common/contract/index.ts";
import type { GatewayDeps } from "../deps.ts";

export interface OperationExamples {
  request?: unknown;
  /** The success answer, by status. */
  response?: Record<string, unknown>;
}

export interface Operation {
  /** "post /v1/subscriptions/{id}": the method and the path as the OpenAPI document writes them. */
  key: string;
  /**
   * The codes it answers beyond those of every operation (docs-errors.ts); without them the document lists every
   * code of the statuses the route declares.
   */
  errors?: readonly ErrorCode[];
  examples?: OperationExamples;
  /** The route as an Elysia plugin, named after `key`. */
  route: (deps: GatewayDeps) => AnyElysia;
}

/** The document's key of a route: "post /v1/subscriptions/{id}" for post and "/v1/subscriptions/:id". */
export function operationKey(method: string, path: string): string {
  return `${method} ${path.replace(/:(\w+)/g, "{$1}")}`;
}

export const SECURITY = [{ bearer: [] }];
