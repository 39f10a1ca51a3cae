// java-tron's int64 fields in JSON: a number, or a decimal string where the node's reader kept a long one exact.

/** A non-negative int64 (thresholds, weights, vote counts, lock periods) as a bigint; absent is proto3's 0. */
export function toCount(value: unknown): bigint | null {
  if (value === undefined) return 0n;
  if (typeof value === "number") return Number.isInteger(value) && value >= 0 ? BigInt(value) : null;
  if (typeof value === "string" && /^\d+$/.test(value)) return BigInt(value);
  return null;
}
