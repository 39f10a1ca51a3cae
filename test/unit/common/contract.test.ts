// The OpenAPI document states the contract module's vocabulary (common/contract/): the same event kinds, chains and
// limits the services enforce. Built in process from the gateway's routes; no service answers a request here.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createRouterTransport } from "@connectrpc/connect";
import { loadConfig } from "../../../common/config.ts";
import {
  DEFAULT_GRACE_SECONDS,
  DEFAULT_PAGE_LIMIT,
  ERROR_STATUS,
  EVENT_KINDS,
  INLINE_ADDRESSES,
  MAX_ADDRESSES_PER_REQUEST,
  MAX_BODY_BYTES,
  MAX_DESCRIPTION_LENGTH,
  MAX_EVENTS,
  MAX_GRACE_SECONDS,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  MAX_MATCH_ASSETS,
  MAX_PAGE_LIMIT,
  MAX_TARGET_LENGTH,
  RECOVER_MAX_AGE_MS,
  RESPONSE_BODY_LIMIT,
  TRON_CHAINS,
  type ErrorCode,
} from "../../../common/contract/index.ts";
import { openRedis, type Redis } from "../../../common/redis.ts";
import { createGatewayApp } from "../../../gateway/app.ts";
import { openApiDocument } from "../../../gateway/docs.ts";

type Json = Record<string, any>;
let doc: Json;
let redis: Redis;

beforeAll(() => {
  // Never connected: the document is made from the routes alone.
  redis = openRedis("redis://127.0.0.1:1", { lazyConnect: true });
  const nothing = createRouterTransport(() => {});
  const app = createGatewayApp({ config: loadConfig({}), registry: nothing, deliverer: nothing, redis });
  doc = JSON.parse(JSON.stringify(openApiDocument(app))) as Json;
});
afterAll(() => redis.disconnect());

/** Every string of the document with where it is. */
function strings(node: unknown, at = ""): [string, string][] {
  if (typeof node === "string") return [[at, node]];
  if (!node || typeof node !== "object") return [];
  return Object.entries(node).flatMap(([k, v]) => strings(v, `${at}/${k}`));
}

const deref = (node: Json): Json =>
  typeof node.$ref === "string" ? (node.$ref.slice(2).split("/").reduce((at: Json, k: string) => at[k], doc) as Json) : node;
const op = (method: string, path: string): Json => doc.paths[path][method];
const bodyOf = (method: string, path: string): Json => deref(op(method, path).requestBody.content["application/json"].schema);
const success = (method: string, path: string, status = "200"): Json =>
  deref(op(method, path).responses[status].content["application/json"].schema);
/** A parameter's description, which the generator writes on the parameter or on its schema. */
function parameterText(method: string, path: string, name: string): string {
  const p = (op(method, path).parameters as Json[]).find((q) => q.name === name)!;
  return (p.description ?? p.schema.description) as string;
}
/** The example of an error code, wherever the document shows it. */
function errorExample(code: ErrorCode): Json {
  for (const [, ops] of Object.entries(doc.paths as Json)) {
    for (const o of Object.values(ops as Json)) {
      const example = (o as Json).responses?.[String(ERROR_STATUS[code])]?.content?.["application/json"]?.examples?.[code];
      if (example) return example.value as Json;
    }
  }
  throw new Error(`no example of ${code}`);
}
const thousands = (n: number) => n.toLocaleString("en-US");

// The values the document names on purpose as wrong, in the examples of unsupported_event and invalid_chain.
const NOT_A_KIND = "wallet.transfer.pending";
const NOT_A_CHAIN = "tron:testnet";

describe("event kinds", () => {
  test("the webhooks section and the event log's payloads are the contract's kinds, in its order", () => {
    expect(Object.keys(doc.webhooks)).toEqual([...EVENT_KINDS]);
    const view = success("get", "/v1/subscriptions/{id}/events/{eventId}");
    expect(view.properties.payload.oneOf.map((r: Json) => deref(r).properties.kind.const)).toEqual([...EVENT_KINDS]);
  });

  test("every kind the document names is one of the contract's, and every list of kinds names them all", () => {
    const named = new Set<string>();
    for (const [at, text] of strings(doc)) {
      for (const [kind] of text.matchAll(/\b(?:wallet\.[a-z]+|service)\.[a-z]+\b/g)) {
        if (kind === NOT_A_KIND && at.includes("unsupported_event")) continue;
        expect({ at, kind, known: (EVENT_KINDS as readonly string[]).includes(kind) }).toEqual({ at, kind, known: true });
        named.add(kind);
      }
    }
    expect([...named].sort()).toEqual([...EVENT_KINDS].sort());
    const lists = [
      bodyOf("post", "/v1/subscriptions").properties.events.description,
      parameterText("get", "/v1/events", "kind"),
      bodyOf("post", "/v1/subscriptions/{id}/test").properties.kind.description,
    ];
    for (const list of lists) for (const kind of EVENT_KINDS) expect(list).toContain(kind);
    expect(lists[0]).toContain(`1 to ${MAX_EVENTS} distinct entries`);
  });
});

describe("chains", () => {
  test("every chain the document names is one of the contract's, and every list of chains names them all", () => {
    for (const [at, text] of strings(doc)) {
      for (const [chain] of text.matchAll(/\btron:[a-z]+\b/g)) {
        if (chain === NOT_A_CHAIN && at.includes("invalid_chain")) continue;
        expect({ at, chain, known: (TRON_CHAINS as readonly string[]).includes(chain) }).toEqual({ at, chain, known: true });
      }
      if (/tron:[a-z]+, tron:/.test(text)) for (const chain of TRON_CHAINS) expect({ at, text }).toEqual({ at, text: expect.stringContaining(chain) });
    }
    const entry = success("get", "/v1/subscriptions/{id}/filters/addresses").properties.items.items;
    for (const chain of TRON_CHAINS) expect(entry.properties.chainId.description).toContain(chain);
    const input = bodyOf("put", "/v1/subscriptions/{id}/filters/addresses").items;
    for (const chain of TRON_CHAINS) expect(input.properties.chainId.description).toContain(chain);
  });
});

describe("limits", () => {
  test("limit on every list: its default and its maximum", () => {
    let lists = 0;
    for (const ops of Object.values(doc.paths as Json)) {
      for (const o of Object.values(ops as Json)) {
        const limit = ((o as Json).parameters ?? []).find((p: Json) => p.in === "query" && p.name === "limit");
        if (!limit) continue;
        lists++;
        expect(limit.schema.default).toBe(DEFAULT_PAGE_LIMIT);
        expect(limit.schema.minimum).toBe(1);
        expect(limit.schema.description).toStartWith(`1 to ${MAX_PAGE_LIMIT}, default ${DEFAULT_PAGE_LIMIT}; above ${MAX_PAGE_LIMIT}`);
      }
    }
    expect(lists).toBe(6); // subscriptions, addresses, a subscription's events, attempts, the event search, backfills
  });

  test("a subscription: description length, inlined addresses, grace period, match assets", () => {
    for (const method of ["post", "put"]) {
      const path = method === "post" ? "/v1/subscriptions" : "/v1/subscriptions/{id}";
      expect(bodyOf(method, path).properties.description.description).toContain(`at most ${MAX_DESCRIPTION_LENGTH} characters`);
    }
    expect(errorExample("description_too_long").detail).toEqual({ max: MAX_DESCRIPTION_LENGTH });
    const subscription = success("post", "/v1/subscriptions", "201");
    expect(subscription.properties.filters.properties.addresses.description).toStartWith(`Up to ${INLINE_ADDRESSES} inlined addresses`);
    expect(op("get", "/v1/subscriptions/{id}").summary).toContain(`up to ${INLINE_ADDRESSES} inlined addresses`);
    expect(op("put", "/v1/subscriptions/{id}/filters/addresses").description).toContain(`inlines up to ${INLINE_ADDRESSES} addresses`);
    const grace = bodyOf("post", "/v1/subscriptions/{id}/secrets/rotate").properties.gracePeriodSeconds;
    expect(grace.maximum).toBe(MAX_GRACE_SECONDS);
    expect(grace.description).toContain(`(default ${DEFAULT_GRACE_SECONDS})`);
    const match = bodyOf("post", "/v1/subscriptions").properties.match;
    expect(JSON.stringify(match)).toContain(`1 to ${MAX_MATCH_ASSETS} distinct assets`);
  });

  test("addresses per request", () => {
    expect(op("patch", "/v1/subscriptions/{id}/filters/addresses").description).toContain(`At most ${thousands(MAX_ADDRESSES_PER_REQUEST)} entries`);
    const example = errorExample("addresses_limit_exceeded");
    expect(example.detail).toEqual({ limit: MAX_ADDRESSES_PER_REQUEST, count: MAX_ADDRESSES_PER_REQUEST + 1 });
    expect(example.message).toContain(`at most ${MAX_ADDRESSES_PER_REQUEST} address entries`);
  });

  test("requests: body size, target length, Idempotency-Key", () => {
    expect(errorExample("payload_too_large").message).toContain(`${MAX_BODY_BYTES} bytes`);
    expect(errorExample("uri_too_long").detail).toEqual({ limit: MAX_TARGET_LENGTH });
    expect(parameterText("post", "/v1/subscriptions", "idempotency-key")).toStartWith(`1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters`);
  });

  test("events: the kept response body and how far recover reaches", () => {
    const kept = `First ${thousands(RESPONSE_BODY_LIMIT)} bytes`;
    const view = success("get", "/v1/subscriptions/{id}/events/{eventId}");
    expect(view.properties.responseBody.description).toStartWith(kept);
    const attempt = success("get", "/v1/subscriptions/{id}/events/{eventId}/attempts").properties.items.items;
    expect(attempt.properties.responseBody.description).toStartWith(kept);
    expect(doc.webhooks[EVENT_KINDS[0]].post.responses["2XX"].description).toContain(`first ${thousands(RESPONSE_BODY_LIMIT)} bytes`);
    const since = bodyOf("post", "/v1/subscriptions/{id}/events/recover").properties.since;
    expect(since.description).toContain(`at most ${RECOVER_MAX_AGE_MS / 86_400_000} days ago`);
  });
});
