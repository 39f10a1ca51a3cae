// The java-tron client against a real HTTP server standing in for a node: "not yet" answers are null (never an
// empty block), transient failures are retried, permanent ones are not, and the TronGrid key travels as a header.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { decodeTransaction } from "../../../../matcher/decode.ts";
import { parseNodeJson, TronClient, TronNodeError } from "../../../../common/tron-node/client.ts";
import type { TronBlock } from "../../../../common/tron-node/types.ts";

type Handler = (path: string, body: Record<string, unknown>, headers: Headers) => Response | Promise<Response>;
let handler: Handler = () => Response.json({});
const seen: { path: string; body: Record<string, unknown>; headers: Headers }[] = [];
let server: ReturnType<typeof Bun.serve>;

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const body = (await req.json().catch(() => ({}))) as Record<string, unknown>;
      seen.push({ path, body, headers: req.headers });
      return handler(path, body, req.headers);
    },
  });
});
afterAll(() => server.stop(true));

const block = (n: number, txs = 0) => ({
  blockID: n.toString(16).padStart(16, "0") + "ab".repeat(24),
  block_header: { raw_data: { number: n, parentHash: "00".repeat(32), timestamp: 1_700_000_000_000 } },
  ...(txs ? { transactions: Array.from({ length: txs }, (_, i) => ({ txID: String(i), raw_data: { contract: [] } })) } : {}),
});

function client(extra: Partial<ConstructorParameters<typeof TronClient>[0]> = {}) {
  return new TronClient({ baseUrl: `http://127.0.0.1:${server.port}/`, backoffMs: 5, attempts: 3, ...extra });
}

test("a block the node has not reached ({}) is null, not an empty block", async () => {
  handler = () => Response.json({});
  expect(await client().getBlockByNum(123)).toBeNull();
  expect(await client().getBlockHeader(123)).toBeNull();
  expect(seen.at(-1)!.body).toEqual({ id_or_num: "123", detail: false, visible: true });
});

test("transaction infos: a count short of the block's transactions, {} or [] for a block with some, is null", async () => {
  handler = () => Response.json([{ id: "a" }]);
  expect(await client().getTransactionInfoByBlockNum(5, 2)).toBeNull();
  handler = () => Response.json({});
  expect(await client().getTransactionInfoByBlockNum(5, 2)).toBeNull();
  handler = () => Response.json([]);
  expect(await client().getTransactionInfoByBlockNum(5, 2)).toBeNull();
  // A block without transactions really has none.
  expect(await client().getTransactionInfoByBlockNum(5, 0)).toEqual([]);
  handler = () => Response.json([{ id: "a" }, { id: "b" }]);
  expect((await client().getTransactionInfoByBlockNum(5, 2))!.map((i) => i.id)).toEqual(["a", "b"]);
});

test("ranges stop where the node's chain ends and never skip a block", async () => {
  handler = (_p, body) => {
    expect(body).toMatchObject({ startNum: 10, endNum: 15 });
    return Response.json({ block: [block(10), block(11), block(13)] });
  };
  expect((await client().getBlockRange(10, 15)).map((b) => b.block_header.raw_data.number)).toEqual([10, 11]);
  handler = () => Response.json({});
  expect(await client().getBlockRange(10, 15)).toEqual([]);
  // java-tron's cap of 100 blocks per request.
  handler = (_p, body) => Response.json({ block: [block(Number(body.startNum))], end: body.endNum });
  await client().getBlockRange(0, 1_000);
  expect(seen.at(-1)!.body).toMatchObject({ startNum: 0, endNum: 100 });
});

test("transient failures (503, 429, {\"Error\"} bodies, refused connections) are retried with backoff", async () => {
  let calls = 0;
  handler = () => {
    calls++;
    if (calls === 1) return new Response("busy", { status: 503 });
    if (calls === 2) return Response.json({ Error: "class java.lang.NullPointerException : null" });
    return Response.json(block(7, 1));
  };
  const b = await client().getNowBlock();
  expect(b.block_header.raw_data.number).toBe(7);
  expect(calls).toBe(3);

  calls = 0;
  handler = () => {
    calls++;
    return new Response("nope", { status: 429 });
  };
  await expect(client().getNowBlock()).rejects.toBeInstanceOf(TronNodeError);
  expect(calls).toBe(3);

  const dead = new TronClient({ baseUrl: "http://127.0.0.1:9", attempts: 2, backoffMs: 5 });
  await expect(dead.getNowBlock()).rejects.toBeDefined();
});

test("a permanent failure (404) is not retried", async () => {
  let calls = 0;
  handler = () => {
    calls++;
    return new Response("no such endpoint", { status: 404 });
  };
  await expect(client().getBlockByNum(1)).rejects.toBeInstanceOf(TronNodeError);
  expect(calls).toBe(1);
});

test("TRON-PRO-API-KEY is sent when a TronGrid key is set, and not otherwise", async () => {
  handler = () => Response.json(block(1));
  await client({ apiKey: "k-123" }).getNowBlock();
  expect(seen.at(-1)!.headers.get("tron-pro-api-key")).toBe("k-123");
  await client().getNowBlock();
  expect(seen.at(-1)!.headers.get("tron-pro-api-key")).toBeNull();
});

test("TRX and TRC-10 amounts past 2^53 reach the decoder digit for digit (a double would round them)", async () => {
  const text = await Bun.file(new URL("../../../../fixtures/tron/mainnet-block-60836289.getblockbynum.visible.json", import.meta.url)).text();
  // The recorded block's TRC-10 transfer of 888888888 units, as a node would print a far larger one: int64's maximum,
  // and 2^53 + 1, the first integer a double cannot hold.
  for (const amount of ["9223372036854775807", "9007199254740993"]) {
    const raw = text.replace('"amount": 888888888', `"amount": ${amount}`);
    expect(raw).not.toBe(text);
    handler = () => new Response(raw, { headers: { "content-type": "application/json" } });
    const b = (await client().getBlockByNum(60836289))!;
    const tx = b.transactions!.find((t) => t.txID === "9f0f4a9cc74f72abcd70f3866d34e672df271ebbf63a29b274e04ee528f3d95b")!;
    expect(decodeTransaction(tx)).toMatchObject({ standard: "TRC10", tokenId: "1004937", amount });
  }
  // In a catch-up batch too; ordinary amounts stay numbers.
  const batch = (amount: string) => `{"block":[{"transactions":[{"raw_data":{"contract":[{"parameter":{"value":{"amount":${amount}}}}]}}]}]}`;
  const value = (body: unknown) => (body as { block: TronBlock[] }).block[0]!.transactions![0]!.raw_data.contract[0]!.parameter.value.amount;
  expect(value(parseNodeJson(batch("12345678901234567890")))).toBe("12345678901234567890");
  expect(value(parseNodeJson(batch("888888888")))).toBe(888888888);
});
