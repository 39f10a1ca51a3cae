// The gateway's /readyz. Its job is the public API, and every request under /v1 starts with authentication, which the
// registry answers from PostgreSQL: the registry reaching its database is the one check that gates readiness. It is
// asked on the registry's main pool (CheckAuthReady), not on the small pool the key lookups share, so a flood of
// lookups cannot queue the probe out and take every gateway out of rotation. Redis (the
// rate limiter fails open without it) and the deliverer (only the event routes need it) are shown, not required,
// so their outage does not take every gateway pod out of rotation with them.
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import type { Readiness } from "../common/http-service.ts";
import { PROBE_DEADLINE_MS } from "../common/deadlines.ts";
import type { Redis } from "../common/redis.ts";
import { DeliveryService } from "../gen/webhooks/delivery/v1/delivery_pb.ts";
import { ApiKeyService } from "../gen/webhooks/registry/v1/registry_pb.ts";

export function gatewayReadiness(registry: Transport, deliverer: Transport | undefined, redis: Redis): Readiness {
  const keys = createClient(ApiKeyService, registry);
  const delivery = deliverer ? createClient(DeliveryService, deliverer) : undefined;
  return {
    checks: {
      // An answer means the registry reached its database; an outage is an RPC error.
      registry: async () => {
        await keys.checkAuthReady({}, { timeoutMs: PROBE_DEADLINE_MS });
        return true;
      },
    },
    informational: {
      redis: async () => (await redis.ping()) === "PONG",
      ...(delivery
        ? {
            // A health read of no subscription: the deliverer answers not_found without touching anything. (The
            // gateway may not call Enqueue: common/internal-auth.ts.)
            deliverer: async () => {
              try {
                await delivery.getHealth({ keyId: "", subscriptionId: "" }, { timeoutMs: PROBE_DEADLINE_MS });
              } catch (err) {
                if (ConnectError.from(err).code !== Code.NotFound) throw err;
              }
              return true;
            },
          }
        : {}),
    },
  };
}
