// Delivery targets (URL, signing secrets, whether the subscription may receive) from the registry, cached briefly:
// a burst of events for one subscription costs one registry call, and a disable or rotation shows within ttlMs.
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { SubscriptionService, type DeliveryTarget } from "../gen/webhooks/registry/v1/registry_pb.ts";
import { isHoldReason, type HoldReason } from "../common/hold-reasons.ts";

const CHUNK = 500;

/**
 * Why events of an existing target are held rather than sent (undefined: they may go). The registry names it; an
 * answer without a name (a registry older than hold_reason) is judged on `active` and the secrets as before.
 */
export function holdReason(t: DeliveryTarget): HoldReason | undefined {
  if (isHoldReason(t.holdReason)) return t.holdReason;
  if (!t.active) return "subscription_disabled";
  if (t.secrets.length === 0) return "secret_unreadable";
  return undefined;
}

export class TargetCache {
  private readonly client: Client<typeof SubscriptionService>;
  private readonly cache = new Map<string, { target: DeliveryTarget; at: number }>();

  constructor(
    transport: Transport,
    private readonly ttlMs = 1_000,
  ) {
    this.client = createClient(SubscriptionService, transport);
  }

  /** Targets by subscription id; `fresh` skips the cache (public calls that decide on them). */
  async get(ids: Iterable<string>, fresh = false): Promise<Map<string, DeliveryTarget>> {
    const out = new Map<string, DeliveryTarget>();
    const now = Date.now();
    const wanted: string[] = [];
    for (const id of new Set(ids)) {
      const hit = fresh ? undefined : this.cache.get(id);
      if (hit && now - hit.at < this.ttlMs) out.set(id, hit.target);
      else wanted.push(id);
    }
    for (let i = 0; i < wanted.length; i += CHUNK) {
      const res = await this.client.getDeliveryTargets({ subscriptionIds: wanted.slice(i, i + CHUNK) });
      for (const t of res.targets) {
        out.set(t.subscriptionId, t);
        this.cache.set(t.subscriptionId, { target: t, at: now });
      }
    }
    if (this.cache.size > 50_000) {
      for (const [id, v] of this.cache) if (now - v.at >= this.ttlMs) this.cache.delete(id);
    }
    return out;
  }

  async ping(): Promise<boolean> {
    await this.client.getDeliveryTargets({ subscriptionIds: [] });
    return true;
  }
}
