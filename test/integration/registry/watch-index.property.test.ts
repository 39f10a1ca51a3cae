// Property: after any sequence of address PATCH/PUT, subscription DELETE, disable/enable, event changes, key chain
// changes and key revocation, across several subscriptions and keys, the Redis watch index equals what PostgreSQL
// says, address by address (who watches it, whether that watcher may match, and its event kinds).
// Real PostgreSQL and Redis through the HTTP API (test/support/stack.ts); keys are managed over the registry's RPC.
// Against one Redis server and a real 3-master Redis Cluster (the same code on sharded slots).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createClient, type Client } from "@connectrpc/connect";
import { SQL } from "bun";
import fc from "fast-check";
import fixtures from "../../../fixtures/tron/addresses.json";
import { inProcessTransport } from "../../../common/rpc.ts";
import { ApiKeyService } from "../../../gen/webhooks/registry/v1/registry_pb.ts";
import { REDIS_KINDS } from "../../support/redis-cluster.ts";
import { startStack, TEST_DESTINATION, type Stack, type TestKey } from "../../support/stack.ts";
import { actualIndex, expectedIndex } from "../../support/watch-index.ts";

const CHAINS = ["tron:mainnet", "tron:nile", "tron:shasta"] as const;
// A small pool makes collisions (same address, several subscriptions and chains) the common case.
const POOL = (fixtures.valid as string[]).slice(0, 6);

const entryArb = fc.record({ chainId: fc.constantFrom(...CHAINS), address: fc.constantFrom(...POOL) });
const listArb = fc.array(entryArb, { maxLength: 6 });
const slotArb = fc.nat({ max: 3 });

type Op =
  | { kind: "patch"; slot: number; add: { chainId: string; address: string }[]; remove: { chainId: string; address: string }[] }
  | { kind: "put"; slot: number; list: { chainId: string; address: string }[] }
  | { kind: "delete"; slot: number }
  | { kind: "status"; slot: number; status: "enabled" | "disabled"; events: readonly string[] }
  | { kind: "chains"; key: number; chains: string[] }
  | { kind: "revoke"; key: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("patch" as const), slot: slotArb, add: listArb, remove: listArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("put" as const), slot: slotArb, list: listArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("delete" as const), slot: slotArb }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("status" as const),
      slot: slotArb,
      status: fc.constantFrom("enabled" as const, "disabled" as const),
      events: fc.constantFrom(["wallet.transfer.broadcasted"], ["service.ping"], ["wallet.transfer.broadcasted", "service.ping"]),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("chains" as const),
      key: fc.nat({ max: 1 }),
      chains: fc.subarray([...CHAINS], { minLength: 1 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("revoke" as const), key: fc.nat({ max: 1 }) }) },
);

describe.each(REDIS_KINDS)("Redis %s", (redisKind) => {
  const numRuns = 25;
  let stack: Stack;
  let sql: SQL;
  let keysRpc: Client<typeof ApiKeyService>;

  beforeAll(async () => {
    stack = await startStack({ redisKind });
    sql = new SQL(stack.database.url, { max: 2 });
    keysRpc = createClient(ApiKeyService, inProcessTransport(stack.registry.routes));
  }, 60_000);

  afterAll(async () => {
    await sql?.close();
    await stack?.stop();
  }, 60_000);

  async function api(k: TestKey, method: string, path: string, body?: unknown): Promise<number> {
    const res = await fetch(stack.baseUrl + path, {
      method,
      headers: { authorization: `Bearer ${k.key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    await res.arrayBuffer();
    return res.status;
  }

  async function create(k: TestKey): Promise<string> {
    const res = await fetch(stack.baseUrl + "/v1/subscriptions", {
      method: "POST",
      headers: { authorization: `Bearer ${k.key}`, "content-type": "application/json" },
      body: JSON.stringify({ destination: { type: "https", url: TEST_DESTINATION }, events: ["wallet.transfer.broadcasted"] }),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { id: string }).id;
  }

  test("the Redis index equals PostgreSQL after random sequences of changes", async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 14 }), async (ops) => {
        runs++;
        // Two keys per run; four subscription slots, slots 0-2 on key 0, slot 3 on key 1.
        const keys = [await stack.createKey(), await stack.createKey({ chains: ["tron:mainnet", "tron:nile"] })];
        const revoked = [false, false];
        const slotKey = (slot: number) => (slot === 3 ? 1 : 0);
        const slots = await Promise.all([0, 1, 2, 3].map((s) => create(keys[slotKey(s)]!)));
        for (const op of ops) {
          if (op.kind === "chains") {
            await keysRpc.setApiKeyChains({ id: keys[op.key]!.id, chains: op.chains });
            continue;
          }
          if (op.kind === "revoke") {
            await keysRpc.revokeApiKey({ id: keys[op.key]!.id });
            revoked[op.key] = true;
            continue;
          }
          const owner = slotKey(op.slot);
          if (revoked[owner]) continue; // its requests are 401 now; the index must still say "inactive"
          const k = keys[owner]!;
          const id = slots[op.slot]!;
          const path = `/v1/subscriptions/${id}`;
          if (op.kind === "patch") {
            if (op.add.length + op.remove.length === 0) continue;
            expect(await api(k, "PATCH", `${path}/filters/addresses`, { add: op.add, remove: op.remove })).toBe(200);
          } else if (op.kind === "put") {
            // A PUT naming a chain the key lacks is refused whole (400); both outcomes must leave the index right.
            expect([200, 400]).toContain(await api(k, "PUT", `${path}/filters/addresses`, op.list));
          } else if (op.kind === "delete") {
            expect(await api(k, "DELETE", path)).toBe(204);
            slots[op.slot] = await create(k);
          } else {
            const body = { destination: { type: "https", url: TEST_DESTINATION }, events: op.events, status: op.status };
            expect(await api(k, "PUT", path, body)).toBe(200);
          }
        }
        const [expected, actual] = [await expectedIndex(sql), await actualIndex(stack.registry.redis, stack.config.redisPrefix)];
        expect(actual).toEqual(expected);
      }),
      { numRuns },
    );
    expect(runs).toBe(numRuns);
  }, 240_000);
});
