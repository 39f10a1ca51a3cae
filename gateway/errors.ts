// Every error the gateway answers, in the one body shape of docs/CONTRACT.md: {"error","message","detail","requestId"}.
// Elysia's own failures (validation, parse, unknown route) are translated here too, so no framework-shaped body
// ever reaches a client.
import { ValidationError } from "elysia";
import { ApiError, internalError, notFound, type ErrorDetail } from "../common/contract/index.ts";

export interface ErrorBody {
  error: string;
  message: string;
  detail: ErrorDetail;
  requestId: string;
}

export function errorBody(err: ApiError, requestId: string): ErrorBody {
  return { error: err.code, message: err.message, detail: err.detail, requestId };
}

export function errorResponse(err: ApiError, requestId: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(errorBody(err, requestId)), {
    status: err.status,
    headers: { "content-type": "application/json", "x-request-id": requestId, ...headers },
  });
}

export function methodNotAllowed(allow: string[]): ApiError {
  return new ApiError("method_not_allowed", `This path accepts ${allow.join(", ")} only.`);
}

// Where a failed schema check lives: body fields as JSON pointers, query and header parameters by their name.
const WHERE: Record<string, string> = { query: "query parameter", headers: "header", params: "path" };

interface ValueErrorLike {
  path: string;
  message: string;
  value?: unknown;
  /** The schema that failed (TypeBox's ValueError carries it). */
  schema?: unknown;
  /** A union's failure: each alternative's own errors. */
  errors?: Iterable<ValueErrorLike>[];
}

const depth = (e: ValueErrorLike) => e.path.split("/").length;

/** The shallowest problem names the field the caller got wrong, not its consequences. */
function shallowest(errors: Iterable<ValueErrorLike>): ValueErrorLike | undefined {
  let best: ValueErrorLike | undefined;
  for (const e of errors) if (best === undefined || depth(e) < depth(best)) best = e;
  return best;
}

/**
 * A union (`null` or an object, say) fails as a whole at its own path. The alternative whose problem lies deepest
 * is the one the value was meant to be (`assets: [{"standard": 5}]` is an array with a bad entry, not a bad null),
 * so its problem is the one to report.
 */
function refine(e: ValueErrorLike): ValueErrorLike {
  if (!Array.isArray(e.errors)) return e;
  let best = e;
  for (const alternative of e.errors) {
    const inner = shallowest(alternative);
    if (inner && depth(inner) > depth(best)) best = inner;
  }
  return best === e ? e : refine(best);
}

/** The first useful problem of a schema validation failure as invalid_request with detail.param. */
export function fromValidationError(err: ValidationError): ApiError {
  const type = err.type;
  if (type === "params") return notFound();
  if (type === "response") return internalError();
  const all = (err.all as ValueErrorLike[] | undefined) ?? [];
  // The shallowest problem names the field the caller got wrong ("destination" is not an object), not its
  // consequences ("destination/type" is then missing too).
  const top = shallowest(all);
  const first = top && refine(top);
  const pointer = first?.path ?? "";
  if (type === "body") {
    if (pointer === "") {
      return new ApiError("invalid_request", describeRoot(err.value, first), { param: "/" });
    }
    return new ApiError("invalid_request", `The field ${pointer} ${describeProblem(first)}`, { param: pointer });
  }
  const name = pointer.replace(/^\//, "") || "query";
  const choices = literalChoices(first?.schema);
  const what = `The ${WHERE[type] ?? type} "${name}"`;
  return new ApiError("invalid_request", choices ? `${what} must be one of ${choices}.` : `${what} is invalid.`, { param: name });
}

function describeRoot(value: unknown, problem: ValueErrorLike | undefined): string {
  const shape = problem && /array/i.test(problem.message) ? "array" : "object";
  if (value === null || value === undefined) return `A JSON ${shape} body is required.`;
  return `The request body must be a JSON ${shape}.`;
}

/** A union of literals (an enumeration such as status or destination.type): its values, for the message. */
function literalChoices(schema: unknown): string | undefined {
  const anyOf = (schema as { anyOf?: unknown } | undefined)?.anyOf;
  if (!Array.isArray(anyOf) || anyOf.length === 0) return undefined;
  const values = anyOf.map((s) => (s as { const?: unknown }).const);
  if (values.some((v) => typeof v !== "string")) return undefined;
  return values.join(", ");
}

function describeProblem(problem: ValueErrorLike | undefined): string {
  if (!problem || /required property|missing/i.test(problem.message)) return "is required.";
  const choices = literalChoices(problem.schema);
  if (choices) return `must be one of ${choices}.`;
  return `is invalid (${problem.message.replace(/\.$/, "").toLowerCase()}).`;
}

// Allowed methods per route pattern, to tell 405 from 404 (Elysia itself only knows "no route").
export interface RoutePattern {
  method: string;
  path: string;
}

export function createMethodIndex(routes: () => readonly RoutePattern[]): (path: string) => string[] {
  let index: { re: RegExp; params: number; methods: Set<string> }[] | undefined;
  const build = () => {
    const byPattern = new Map<string, Set<string>>();
    for (const r of routes()) {
      const m = r.method.toUpperCase();
      if (m === "ALL" || m === "OPTIONS") continue;
      let set = byPattern.get(r.path);
      if (!set) byPattern.set(r.path, (set = new Set()));
      set.add(m);
    }
    return [...byPattern].map(([pattern, methods]) => ({
      params: pattern.split("/").filter((seg) => seg.startsWith(":") || seg === "*").length,
      re: new RegExp(
        "^" +
          pattern
            .split("/")
            .map((seg) => (seg.startsWith(":") ? "[^/]+" : seg === "*" ? ".*" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
            .join("/") +
          "/?$",
      ),
      methods,
    }));
  };
  return (path) => {
    index ??= build();
    // Only the most literal routes that match count: `/events/recover` (POST) is not also `/events/:eventId` (GET),
    // as the router itself prefers the literal segment.
    const matching = index.filter(({ re }) => re.test(path));
    const fewest = Math.min(...matching.map((m) => m.params));
    const allowed = new Set<string>();
    for (const { params, methods } of matching) if (params === fewest) for (const m of methods) allowed.add(m);
    // Elysia answers HEAD wherever it answers GET.
    if (allowed.has("GET")) allowed.add("HEAD");
    return [...allowed].sort();
  };
}
