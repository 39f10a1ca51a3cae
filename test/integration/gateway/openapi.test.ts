// The OpenAPI document as served: the webhooks section (a payload schema per event kind, the delivery headers, a
// signed example), error responses with the shared schema, real examples, limit's default, servers, and
// `redocly lint` run on it offline. The README's signature example is run against real signatures.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Webhook } from "standardwebhooks";
import {
  ACTIVITY_KINDS,
  ERROR_STATUS,
  EVENT_KINDS,
  PING,
  TRANSFER_KINDS,
  familyOf,
  type ErrorCode,
} from "../../../common/contract/index.ts";
import { signatureHeader } from "../../../deliverer/sign.ts";
import { EXAMPLE_PAYLOADS, EXAMPLE_SECRET, VERIFY_EXAMPLE } from "../../../gateway/event-catalog.ts";
import { openApiDocument } from "../../../gateway/docs.ts";
import { createTronWebhooksClient, unwrap } from "../../../clients/typescript/src/index.ts";
import { startStack, TEST_DESTINATION, type Stack } from "../../support/stack.ts";

const ROOT = resolve(import.meta.dir, "../../..");

// A parsed document, walked by hand.
type Json = Record<string, any>;
let stack: Stack;
let doc: Json;
let raw: string;

beforeAll(async () => {
  stack = await startStack();
  const res = await fetch(`${stack.baseUrl}/openapi.json`);
  expect(res.status).toBe(200);
  raw = await res.text();
  doc = JSON.parse(raw) as Json;
});
afterAll(async () => {
  await stack?.stop();
});

/** Follows a local $ref ("#/components/schemas/X"). */
function deref(node: Json): Json {
  if (typeof node.$ref !== "string") return node;
  return node.$ref.slice(2).split("/").reduce((at: Json, key: string) => at[key], doc) as Json;
}

function operations(): [string, Json][] {
  return Object.entries(doc.paths as Json).flatMap(([path, ops]) =>
    Object.entries(ops as Json).map(([method, op]) => [`${method} ${path}`, op as Json] as [string, Json]),
  );
}

describe("webhooks section", () => {
  test("one POST per event kind, its payload schema with every field the contract defines", () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.webhooks).sort()).toEqual([...EVENT_KINDS].sort());
    const dataOf = (kind: string): Json => {
      const body = doc.webhooks[kind].post.requestBody;
      expect(body.required).toBe(true);
      const envelope = deref(body.content["application/json"].schema);
      expect(envelope.required).toEqual(["id", "kind", "date", "subscriptionId", "data"]);
      expect(envelope.properties.kind.const).toBe(kind);
      return deref(envelope.properties.data);
    };
    const transfer = [
      "chainId", "blockNumber", "blockHash", "blockTimestamp", "txId", "logIndex", "from", "to", "amount", "asset",
      "matchedAddresses", "internalIndex", "fee", "memo", "backfill",
    ];
    const broadcasted = dataOf("wallet.transfer.broadcasted");
    expect(broadcasted.required).toEqual(transfer);
    expect(Object.keys(broadcasted.properties)).toEqual([...transfer, "test"]);
    expect(dataOf("wallet.transfer.confirmed").required).toEqual([...transfer, "solidifiedBlockNumber"]);
    expect(dataOf("wallet.transfer.failed").required).toEqual([...transfer, "reason", "solidifiedBlockNumber"]);
    expect(dataOf("service.ping").required).toEqual(["message"]);
    expect(broadcasted.properties.asset.properties.standard.anyOf.map((s: Json) => s.const)).toEqual(["TRX", "TRC10", "TRC20"]);
    expect(broadcasted.properties.memo.anyOf.map((s: Json) => s.type)).toEqual(["string", "null"]);
  });

  test("account activity: each family's fields, .confirmed adding the solidified head, roles and types as the contract lists them", () => {
    const dataOf = (kind: string): Json => deref(deref(doc.webhooks[kind].post.requestBody.content["application/json"].schema).properties.data);
    const place = ["chainId", "blockNumber", "blockHash", "blockTimestamp", "txId", "logIndex"];
    const tail = ["matchedAddresses", "fee", "backfill"];
    const families: Record<string, { fields: string[]; roles: string[] }> = {
      approval: { fields: ["owner", "spender", "amount", "unlimited", "asset"], roles: ["owner", "spender"] },
      permission: { fields: ["address", "owner", "witness", "actives"], roles: ["owner"] },
      resource: { fields: ["type", "owner", "resource", "amount", "receiver", "lock", "lockPeriod", "votes"], roles: ["owner", "receiver"] },
      blacklist: { fields: ["type", "address", "amount", "asset"], roles: ["blacklisted"] },
    };
    for (const [family, { fields, roles }] of Object.entries(families)) {
      const broadcasted = dataOf(`wallet.${family}.broadcasted`);
      expect(broadcasted.required).toEqual([...place, ...fields, ...tail]);
      expect(Object.keys(broadcasted.properties)).toEqual([...place, ...fields, ...tail, "test"]);
      expect(dataOf(`wallet.${family}.confirmed`).required).toEqual([...place, ...fields, ...tail, "solidifiedBlockNumber"]);
      const role = broadcasted.properties.matchedAddresses.items.properties.role;
      expect(((role.anyOf ?? [role]) as Json[]).map((s) => s.const)).toEqual(roles);
      // The example is the family's own, and every field it shows is documented.
      const example = doc.webhooks[`wallet.${family}.broadcasted`].post.requestBody.content["application/json"].example;
      expect(Object.keys(example.data).sort()).toEqual([...place, ...fields, ...tail].sort());
    }
    const resource = dataOf("wallet.resource.broadcasted").properties;
    expect(resource.type.anyOf.map((s: Json) => s.const)).toEqual([
      "freeze", "unfreeze", "withdraw_unfrozen", "cancel_unfreeze", "delegate", "undelegate", "vote", "withdraw_rewards",
    ]);
    expect(resource.resource.anyOf[0].anyOf.map((s: Json) => s.const)).toEqual(["ENERGY", "BANDWIDTH", "TRON_POWER"]);
    expect(dataOf("wallet.blacklist.confirmed").properties.type.anyOf.map((s: Json) => s.const)).toEqual(["added", "removed", "funds_destroyed"]);
    const permission = dataOf("wallet.permission.broadcasted").properties;
    expect(permission.owner.required).toEqual(["threshold", "keys"]);
    expect(permission.actives.items.required).toEqual(["name", "threshold", "operations", "keys"]);
    expect(dataOf("wallet.approval.broadcasted").properties.unlimited.type).toBe("boolean");
    // The matcher's setting for the blacklist is named where the kind is described.
    expect(doc.webhooks["wallet.blacklist.broadcasted"].post.description).toContain("BLACKLIST_CONTRACTS");
    for (const family of Object.keys(families)) {
      expect(doc.webhooks[`wallet.${family}.broadcasted`].post.description).toContain("gets no final event");
    }
  });

  test("each kind documents the delivery headers, when it fires, and a full example signed for real", () => {
    for (const kind of EVENT_KINDS) {
      const op = doc.webhooks[kind].post;
      expect(op.description.length).toBeGreaterThan(80);
      expect(op.description).toContain("never contradict");
      const headers = Object.fromEntries((op.parameters as Json[]).map((p) => [p.name, p]));
      expect(Object.keys(headers).sort()).toEqual(["user-agent", "webhook-id", "webhook-signature", "webhook-timestamp", "x-subscription-id"]);
      for (const h of Object.values(headers)) expect(h).toMatchObject({ in: "header", required: true });
      const example = op.requestBody.content["application/json"].example;
      expect(example).toEqual(EXAMPLE_PAYLOADS[kind]);
      expect(headers["webhook-id"].example).toBe(example.id);
      expect(headers["x-subscription-id"].example).toBe(example.subscriptionId);
      // The signature is the deliverer's own over the example's bytes: anyone can check it with the documented secret.
      const at = new Date(Number(headers["webhook-timestamp"].example) * 1000);
      expect(headers["webhook-signature"].example).toBe(new Webhook(EXAMPLE_SECRET).sign(example.id, at, JSON.stringify(example)));
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["2XX", "429", "default"]));
    }
    const tag = (doc.tags as Json[]).find((t) => t.name === "webhooks")!;
    for (const words of [
      "provisional", "never contradict", "confirmed before broadcasted", "(chainId, txId, logIndex, internalIndex)",
      "(chainId, txId, logIndex) within its family", "gets no final event", "webhook-id",
    ]) {
      expect(tag.description).toContain(words);
    }
    expect(tag.description).toContain(VERIFY_EXAMPLE);
    // The event log shows the same payloads.
    const view = doc.paths["/v1/subscriptions/{id}/events/{eventId}"].get.responses["200"].content["application/json"].schema;
    expect(view.properties.payload.oneOf.map((r: Json) => deref(r).properties.kind.const)).toEqual([...EVENT_KINDS]);
  });
});

describe("integers", () => {
  test("what the service sends (answers, webhook payloads) documents its integers as integers, never strings", () => {
    const stringIntegers: string[] = [];
    const walk = (node: unknown, where: string): void => {
      if (!node || typeof node !== "object") return;
      const schema = node as Json;
      if (schema.type === "string" && schema.format === "integer") stringIntegers.push(where);
      for (const [k, v] of Object.entries(schema)) walk(v, `${where}/${k}`);
    };
    walk(doc.webhooks, "#/webhooks");
    walk(doc.components.schemas, "#/components/schemas");
    for (const [key, op] of operations()) walk(op.responses, `${key} responses`);
    expect(stringIntegers).toEqual([]);
    const data = deref({ $ref: "#/components/schemas/TransferBroadcastedData" });
    expect(data.properties.blockNumber).toEqual({ type: "integer", description: expect.any(String) });
    expect(data.properties.asset.properties.decimals.anyOf.map((s: Json) => s.type)).toEqual(["integer", "null"]);
  });
});

describe("operations", () => {
  test("every /v1 operation lists its error codes per status, each with the shared error schema and an example", () => {
    expect(deref({ $ref: "#/components/schemas/Error" }).required).toEqual(["error", "message", "detail", "requestId"]);
    let checked = 0;
    for (const [key, op] of operations()) {
      if (!key.includes(" /v1/")) continue;
      const errors = Object.entries(op.responses as Json).filter(([status]) => Number(status) >= 400);
      expect(errors.map(([s]) => s)).toEqual(expect.arrayContaining(["401", "429", "503"]));
      for (const [status, response] of errors) {
        const json = response.content["application/json"];
        expect(json.schema).toEqual({ $ref: "#/components/schemas/Error" });
        const codes = Object.keys(json.examples) as ErrorCode[];
        expect(codes.length).toBeGreaterThan(0);
        expect(response.description).toBe(`Error codes: ${codes.join(", ")}.`);
        for (const code of codes) {
          expect<number>(ERROR_STATUS[code]).toBe(Number(status));
          expect(Object.keys(json.examples[code].value)).toEqual(["error", "message", "detail", "requestId"]);
          expect(json.examples[code].value.error).toBe(code);
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(40);
    const create = doc.paths["/v1/subscriptions"].post.responses;
    expect(Object.keys(create["400"].content["application/json"].examples)).toEqual(
      expect.arrayContaining(["invalid_request", "ssrf_blocked", "unsupported_event", "description_too_long"]),
    );
    expect(Object.keys(create["409"].content["application/json"].examples).sort()).toEqual(["idempotency_conflict", "idempotency_in_flight"]);
    expect(create["429"].headers["Retry-After"]).toBeDefined();
    const retry = doc.paths["/v1/subscriptions/{id}/events/{eventId}/retry"].post.responses;
    expect(Object.keys(retry["409"].content["application/json"].examples)).toEqual(
      expect.arrayContaining(["event_not_retryable", "subscription_disabled"]),
    );
  });

  test("the delivery operations of issue 13: attempts, recover, the event search and health, with their shapes", () => {
    const schemaOf = (op: Json, status: string) => deref(op.responses[status].content["application/json"].schema);
    const attempts = doc.paths["/v1/subscriptions/{id}/events/{eventId}/attempts"].get;
    const attempt = deref(schemaOf(attempts, "200").properties.items.items);
    expect(Object.keys(attempt.properties).sort()).toEqual(["date", "durationMs", "error", "id", "responseBody", "responseStatus", "trigger"]);
    expect(attempt.properties.trigger.enum).toEqual(["automatic", "manual"]);
    const recover = doc.paths["/v1/subscriptions/{id}/events/recover"].post;
    expect(Object.keys(schemaOf(recover, "202").properties)).toEqual(["recovered"]);
    const recoverBody = deref(recover.requestBody.content["application/json"].schema);
    expect([Object.keys(recoverBody.properties).sort(), recoverBody.required]).toEqual([["since", "status", "until"], ["since"]]);
    expect(recover.parameters.map((p: Json) => p.name)).toContain("idempotency-key");
    expect(Object.keys(recover.responses)).toEqual(expect.arrayContaining(["202", "400", "404", "409"]));
    const search = doc.paths["/v1/events"].get;
    expect(search.parameters.map((p: Json) => p.name).sort()).toEqual(
      ["address", "chainId", "kind", "limit", "nextPageToken", "since", "status", "subscriptionId", "txId", "until"],
    );
    const health = schemaOf(doc.paths["/v1/subscriptions/{id}/health"].get, "200");
    expect(Object.keys(health.properties).sort()).toEqual(
      ["consecutiveFailures", "durationMs", "hourlySuccessRate", "last24Hours", "lastFailure", "lastHour", "lastSuccess", "pending"],
    );
  });

  test("limit's default is 50 on every list; servers is set", () => {
    const lists = operations().filter(([, op]) => (op.parameters as Json[] | undefined)?.some((p) => p.name === "limit"));
    expect(lists.map(([k]) => k)).toEqual(
      expect.arrayContaining(["get /v1/subscriptions", "get /v1/subscriptions/{id}/events", "get /v1/subscriptions/{id}/filters/addresses"]),
    );
    for (const [, op] of lists) {
      const limit = (op.parameters as Json[]).find((p) => p.name === "limit")!;
      expect(limit.schema).toMatchObject({ type: "integer", default: 50, minimum: 1 });
    }
    expect(doc.servers.length).toBeGreaterThan(0);
    expect(doc.servers[0].url).toBeString();
  });

  test("request bodies and answers carry real examples, never generated placeholders", () => {
    const placeholders: string[] = [];
    const walk = (node: unknown, where: string): void => {
      if (typeof node === "string" && /^(string|string:.*)$/i.test(node)) placeholders.push(where);
      if (node && typeof node === "object") {
        for (const [k, v] of Object.entries(node)) {
          if (/^additionalProp/.test(k)) placeholders.push(`${where}/${k}`);
          walk(v, `${where}/${k}`);
        }
      }
    };
    let bodies = 0;
    for (const [key, op] of operations()) {
      const json = op.requestBody?.content?.["application/json"];
      if (json) {
        expect(json.example, `${key} request example`).toBeDefined();
        walk(json.example, key);
        bodies++;
      }
      if (!key.includes(" /v1/")) continue;
      for (const [status, response] of Object.entries(op.responses as Json)) {
        if (Number(status) >= 300 || !response.content) continue;
        expect(response.content["application/json"].example, `${key} ${status} example`).toBeDefined();
        walk(response.content["application/json"].example, `${key} ${status}`);
      }
    }
    expect(bodies).toBeGreaterThanOrEqual(6);
    expect(placeholders).toEqual([]);
    const create = doc.paths["/v1/subscriptions"].post.requestBody.content["application/json"].example;
    expect(create.destination.url).toBe("https://example.com/hooks");
    expect(raw).toContain("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t");
  });
});

describe("generated client", () => {
  test("clients/typescript/openapi.json, which the client is generated from, is the served document", () => {
    expect(JSON.parse(readFileSync(join(ROOT, "clients/typescript/openapi.json"), "utf8"))).toEqual(doc);
  });

  test("the document is the same after the gateway has answered requests", async () => {
    // Elysia writes additionalProperties: false into the (shared) schemas of a route whose validator it compiles,
    // at the route's first request in the process.
    const key = await stack.createKey();
    const api = createTronWebhooksClient({ baseUrl: stack.baseUrl, apiKey: key.key });
    const body = { destination: { type: "https" as const, url: TEST_DESTINATION }, events: ["wallet.transfer.broadcasted"] };
    const sub = await unwrap(api.POST("/v1/subscriptions", { body }));
    await unwrap(api.GET("/v1/subscriptions/{id}", { params: { path: { id: sub.id } } }));
    await unwrap(api.GET("/v1/subscriptions"));
    expect(openApiDocument(stack.gateway)).toEqual(doc);
  });
});

describe("redocly lint", () => {
  test("reports no error on the served document (offline: telemetry and update checks off, no config, no remote rules)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "openapi-lint-"));
    try {
      writeFileSync(join(dir, "openapi.json"), raw);
      const proc = Bun.spawn([join(ROOT, "node_modules/.bin/redocly"), "lint", "openapi.json", "--format=json"], {
        cwd: dir,
        stdout: "pipe",
        stderr: "pipe",
        env: {
          PATH: process.env.PATH ?? "",
          HOME: dir,
          REDOCLY_TELEMETRY: "off",
          REDOCLY_SUPPRESS_UPDATE_NOTICE: "true",
          // Anything it might still try to fetch goes to a closed loopback port instead of leaving the machine.
          HTTP_PROXY: "http://127.0.0.1:9",
          HTTPS_PROXY: "http://127.0.0.1:9",
          NO_PROXY: "",
        },
      });
      const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      const report = JSON.parse(out) as { totals: { errors: number }; problems: { ruleId: string; severity: string; message: string }[] };
      const errors = report.problems.filter((p) => p.severity === "error");
      expect(errors, err).toEqual([]);
      expect(report.totals.errors).toBe(0);
      // Examples that drift from their schemas are warnings to redocly; here they fail.
      expect(report.problems.filter((p) => p.ruleId === "no-invalid-media-type-examples")).toEqual([]);
      expect(code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("README", () => {
  test("its Events section names every kind and shows the catalog's example of each transfer kind, an approval and the ping, in full", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const events = readme.slice(readme.indexOf("\n## Events\n"), readme.indexOf("\n## ", readme.indexOf("\n## Events\n") + 1));
    const shown = [...events.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!) as unknown);
    // The README has room for one activity example; /openapi.json (checked above) has every kind's.
    const kinds = [...TRANSFER_KINDS, "wallet.approval.broadcasted", PING] as const;
    expect(shown).toEqual(kinds.map((kind) => EXAMPLE_PAYLOADS[kind]));
    for (const kind of ACTIVITY_KINDS) expect(events).toContain(`\`wallet.${familyOf(kind)}.broadcasted\` / \`.confirmed\``);
    expect(events).toContain("`(chainId, txId, logIndex)`\nwithin its family");
    for (const words of ["provisional", "never contradict", "`confirmed`\n  before `broadcasted`", "`(chainId, txId, logIndex, internalIndex)`", "`webhook-id`"]) {
      expect(events).toContain(words);
    }
  });
});

describe("signature verification example", () => {
  test("the README shows it, and it accepts a real delivery and rejects a tampered or stale one", async () => {
    expect(VERIFY_EXAMPLE.split("\n").length).toBeLessThanOrEqual(10);
    expect(readFileSync(join(ROOT, "README.md"), "utf8")).toContain(VERIFY_EXAMPLE);
    // Beside node_modules so that its `import "standardwebhooks"` resolves as in a receiver's project.
    const dir = join(ROOT, "node_modules/.cache/openapi-test");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `verify-${process.pid}.ts`);
    writeFileSync(file, VERIFY_EXAMPLE);
    try {
      process.env.WEBHOOK_SECRET = EXAMPLE_SECRET;
      const { receive } = (await import(file)) as { receive(req: Request): Promise<Response> };
      const payload = EXAMPLE_PAYLOADS["wallet.transfer.confirmed"];
      const body = JSON.stringify(payload);
      const deliver = (at: Date, sent = body) =>
        receive(
          new Request("https://127.0.0.1/hooks", {
            method: "POST",
            body: sent,
            headers: {
              "content-type": "application/json",
              "webhook-id": payload.id,
              "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
              "webhook-signature": signatureHeader([EXAMPLE_SECRET], payload.id, at, body),
            },
          }),
        );
      expect((await deliver(new Date())).status).toBe(204);
      expect((await deliver(new Date(), body.replace("6868769", "9868769"))).status).toBe(401);
      expect((await deliver(new Date(Date.now() - 10 * 60_000))).status).toBe(401);
    } finally {
      delete process.env.WEBHOOK_SECRET;
      rmSync(file, { force: true });
    }
  });
});
