// The RPC transports (common/rpc.ts) as their callers see them. In-process: handler errors arrive as the public
// ApiError, deadlines and cancellations answer at once, unimplemented methods are Unimplemented. Over the network:
// a service that cannot be reached is Unavailable.
import { describe, expect, test } from "bun:test";
import { Code, ConnectError, createClient, type ConnectRouter } from "@connectrpc/connect";
import { ApiError } from "../../../common/contract/index.ts";
import { fromRpcError } from "../../../common/rpc-errors.ts";
import { inProcessTransport, networkTransport } from "../../../common/rpc.ts";
import { SubscriptionService, type GetSubscriptionRequest } from "../../../gen/webhooks/registry/v1/registry_pb.ts";

let seen: GetSubscriptionRequest | undefined;
const routes = (router: ConnectRouter) =>
  router.service(SubscriptionService, {
    async getSubscription(req, ctx) {
      seen = req;
      if (req.id === "remaining") {
        const left = ctx.timeoutMs();
        return { subscription: { id: left === undefined ? "none" : left > 0 && left <= 1_000 ? "within" : `odd:${left}` } };
      }
      if (req.id === "slow") {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        return { subscription: { id: ctx.signal.aborted ? "aborted" : "late" } };
      }
      return {
        subscription: { id: req.id, events: ["service.ping"], dateCreatedMs: 1n, destination: { type: "https", url: "https://x" } },
        idempotency: { replayed: ctx.requestHeader.get("x-test") === "1" },
      };
    },
    async listSubscriptions() {
      throw new ApiError("invalid_pagination_token", "The page token is malformed.");
    },
    async deleteSubscription() {
      throw new Error("boom");
    },
  });

const client = createClient(SubscriptionService, inProcessTransport(routes));

describe("inProcessTransport", () => {
  test("calls the handler with the request and its headers, and returns a full message (defaults filled in)", async () => {
    const res = await client.getSubscription({ keyId: "k", id: "sub_1" }, { headers: { "x-test": "1" } });
    expect(res.subscription?.id).toBe("sub_1");
    expect(res.subscription?.dateCreatedMs).toBe(1n);
    expect(res.subscription?.status).toBe("");
    expect(res.idempotency?.replayed).toBe(true);
    expect(seen?.keyId).toBe("k");
  });

  test("an ApiError from the handler reaches the caller with its code, message and detail", async () => {
    const err = await client.listSubscriptions({}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    const api = fromRpcError(err);
    expect(api.code).toBe("invalid_pagination_token");
    expect(api.message).toBe("The page token is malformed.");
  });

  test("any other error is internal, never a leak of its message", async () => {
    const api = fromRpcError(await client.deleteSubscription({}).catch((e: unknown) => e));
    expect(api.code).toBe("internal_error");
    expect(api.message).not.toContain("boom");
  });

  test("a deadline answers DeadlineExceeded at the deadline (503 for the API), not when the handler ends", async () => {
    const started = performance.now();
    const err = await client.getSubscription({ id: "slow" }, { timeoutMs: 50 }).catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(500);
    expect(ConnectError.from(err).code).toBe(Code.DeadlineExceeded);
    expect(fromRpcError(err).code).toBe("service_unavailable");
  });

  test("the handler sees the time left before the caller's deadline", async () => {
    expect((await client.getSubscription({ id: "remaining" }, { timeoutMs: 1_000 })).subscription?.id).toBe("within");
    expect((await client.getSubscription({ id: "remaining" })).subscription?.id).toBe("none");
  });

  test("a cancelled call answers Canceled at once", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    const started = performance.now();
    const err = await client.getSubscription({ id: "slow" }, { signal: controller.signal }).catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(500);
    expect(ConnectError.from(err).code).toBe(Code.Canceled);
  });

  test("a method the service does not implement is Unimplemented", async () => {
    const err = await client.updateSubscription({}).catch((e: unknown) => e);
    expect(ConnectError.from(err).code).toBe(Code.Unimplemented);
  });
});

describe("networkTransport", () => {
  test("a service that cannot be reached is Unavailable (503 for the API), never Unknown (500)", async () => {
    const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = closed.port;
    closed.stop(true);
    const remote = createClient(SubscriptionService, networkTransport(`http://127.0.0.1:${port}`, { token: undefined }));
    const err = await remote.getSubscription({ id: "x" }).catch((e: unknown) => e);
    expect(ConnectError.from(err).code).toBe(Code.Unavailable);
    expect(fromRpcError(err).code).toBe("service_unavailable");
  });
});
