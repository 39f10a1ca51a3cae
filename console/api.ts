// The console's only way to the service: the public /v1 API with the API key of this tab (sessionStorage only).
const KEY = "tron-webhooks.apiKey";

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly detail: unknown,
  ) {
    super(message);
  }
}

export function apiKey(): string | null {
  return sessionStorage.getItem(KEY);
}

export function signIn(key: string): void {
  sessionStorage.setItem(KEY, key);
}

export function signOut(): void {
  sessionStorage.removeItem(KEY);
}

/** The body as JSON; a body that is not (a proxy's HTML error page, say) gives null, so the status text is shown. */
function parseJson(text: string): Record<string, unknown> | null {
  if (!text) return null;
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return null;
  }
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { authorization: `Bearer ${apiKey() ?? ""}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const json = parseJson(text);
  if (!res.ok) {
    // Shown as the API words it: the code and its sentence.
    throw new ApiFailure(res.status, String(json?.error ?? res.status), String(json?.message ?? res.statusText), json?.detail ?? null);
  }
  return json as T;
}

export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** As the API returns it: `url` for https; `broker` and `exchange`/`routingKey` (amqp) or `subject` (nats). */
export interface Destination {
  type: string;
  url?: string;
  broker?: string;
  exchange?: string;
  routingKey?: string;
  subject?: string;
  secret?: string;
}

/** A destination in one line, for the subscriptions table. */
export function describeDestination(d: Destination): string {
  if (d.type === "amqp") return `amqp: broker ${d.broker}, exchange "${d.exchange ?? ""}", routing key "${d.routingKey ?? ""}"`;
  if (d.type === "nats") return `nats: broker ${d.broker}, subject ${d.subject}`;
  return d.url ?? "";
}

export interface Subscription {
  id: string;
  destination: Destination;
  events: string[];
  filters: { addresses: { chainId: string; address: string }[]; hasMore?: boolean };
  status: "enabled" | "disabled";
  description: string;
  dateCreated: string;
  dateUpdated: string;
}

export interface EventView {
  id: string;
  subscriptionId: string;
  kind: string;
  chainId: string | null;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  deliveryCount: number;
  responseStatus: number | null;
  responseBody: string | null;
  payload: Record<string, unknown>;
  dateCreated: string;
}

export interface Attempt {
  id: string;
  date: string;
  durationMs: number;
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
  trigger: string;
}

export interface Health {
  lastHour: { attempts: number; succeeded: number; successRate: number | null };
  last24Hours: { attempts: number; succeeded: number; successRate: number | null };
  lastSuccess: string | null;
  lastFailure: { date: string; reason: string } | null;
  consecutiveFailures: number;
  durationMs: { p50: number | null; p99: number | null };
  pending: number;
  hourlySuccessRate: (number | null)[];
}

export interface Page<T> {
  items: T[];
  nextPageToken?: string | null;
}
