// The console's only way to the service: the public /v1 API through the generated client (clients/typescript), with
// the API key of this tab (sessionStorage only). Its types are the API's, so a change the console does not follow
// fails the type check.
import { createTronWebhooksClient, type Destination } from "../clients/typescript/src/index.ts";

export { ApiError, unwrap } from "../clients/typescript/src/index.ts";
export type { Backfill, Destination, DestinationInput, EventView, RecoverRequest, Subscription } from "../clients/typescript/src/index.ts";

const KEY = "tron-webhooks.apiKey";

export function apiKey(): string | null {
  return sessionStorage.getItem(KEY);
}

export function signIn(key: string): void {
  sessionStorage.setItem(KEY, key);
}

export function signOut(): void {
  sessionStorage.removeItem(KEY);
}

/** Same origin as the page; the key is read on every request (sign-in and sign-out change it). */
export const client = createTronWebhooksClient({ apiKey: () => apiKey() ?? "" });

/** Query parameters without the empty ones (a filter left blank is not sent). */
export function compact<T extends Record<string, string | number | undefined>>(params: T): { [K in keyof T]?: Exclude<T[K], "" | undefined> } {
  const out: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") out[k] = v;
  return out as { [K in keyof T]?: Exclude<T[K], "" | undefined> };
}

/** A destination in one line, for the subscriptions table. */
export function describeDestination(d: Destination): string {
  if (d.type === "amqp") return `amqp: broker ${d.broker}, exchange "${d.exchange ?? ""}", routing key "${d.routingKey ?? ""}"`;
  if (d.type === "nats") return `nats: broker ${d.broker}, subject ${d.subject}`;
  return d.url ?? "";
}

