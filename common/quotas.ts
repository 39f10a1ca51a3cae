// Per-API-key quotas (issue 30, item 4): what each one bounds, the operator's defaults (QUOTA_* variables), a key's
// own overrides (`bun run keys quotas`), and the one error every service answers when a count would pass its cap.
// The registry enforces subscriptions and addresses, the deliverer deliveries in flight and open streams.
import { ApiError } from "./contract/index.ts";

export const QUOTAS = ["subscriptions", "addresses", "deliveries", "streams"] as const;
export type Quota = (typeof QUOTAS)[number];

/** A key's overrides: a missing entry means the operator's default. */
export type QuotaOverrides = Partial<Record<Quota, number>>;
export type QuotaLimits = Record<Quota, number>;

export function isQuota(value: string): value is Quota {
  return (QUOTAS as readonly string[]).includes(value);
}

/** Each quota's environment variable, default and meaning (README's configuration table says the same). */
export const QUOTA_DEFAULTS: Readonly<Record<Quota, { variable: string; value: number; meaning: string }>> = {
  subscriptions: { variable: "QUOTA_SUBSCRIPTIONS", value: 10_000, meaning: "subscriptions per API key" },
  addresses: { variable: "QUOTA_ADDRESSES", value: 10_000_000, meaning: "watched address entries per API key, over all its subscriptions" },
  deliveries: {
    variable: "QUOTA_DELIVERIES_IN_FLIGHT",
    value: 128,
    meaning: "HTTPS delivery attempts in flight per API key and deliverer process, over all its destinations",
  },
  streams: { variable: "QUOTA_STREAMS", value: 16, meaning: "open StreamEvents streams per API key and deliverer process" },
};

/** The largest limit a quota takes (a PostgreSQL integer). */
export const MAX_QUOTA = 2_147_483_647;

/** Parses a quota's value: a whole number from 0 to MAX_QUOTA; `what` names it in the error. */
export function parseQuotaValue(raw: string, what: string): number {
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isInteger(n) || n < 0 || n > MAX_QUOTA) {
    throw new Error(`${what} must be a whole number from 0 to ${MAX_QUOTA}, got "${raw}"`);
  }
  return n;
}

/** The operator's defaults from the environment (QUOTA_*). */
export function quotaDefaults(env: Record<string, string | undefined>): QuotaLimits {
  const out = {} as QuotaLimits;
  for (const q of QUOTAS) {
    const { variable, value } = QUOTA_DEFAULTS[q];
    const raw = env[variable];
    out[q] = raw === undefined || raw === "" ? value : parseQuotaValue(raw, variable);
  }
  return out;
}

/** The limit in force for a key: its override, else the default. */
export function quotaLimit(quota: Quota, overrides: QuotaOverrides | undefined, defaults: QuotaLimits): number {
  return overrides?.[quota] ?? defaults[quota];
}

/** 403 quota_exceeded: the key is at its cap; waiting does not help, freeing (or a higher quota) does. */
export function quotaExceeded(quota: Quota, limit: number): ApiError {
  return new ApiError("quota_exceeded", `This API key's ${QUOTA_DEFAULTS[quota].meaning.split(" per ")[0]} quota is ${limit}.`, { quota, limit });
}
