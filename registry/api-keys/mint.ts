// API key secrets: minted here, shown once, kept only as their SHA-256 (registry/db/api-keys.ts stores the hash).
import { randomBytes } from "node:crypto";
import { sha256Hex } from "../../common/crypto.ts";

/** "whk_" + 43 base64url characters. */
const API_KEY_PATTERN = /^whk_[A-Za-z0-9_-]{43}$/;

export function hashApiKey(secret: string): string {
  return sha256Hex(secret);
}

/** A new key's secret (for its owner, once) and the hash the registry keeps. */
export function mintApiKey(): { secret: string; hash: string } {
  const secret = "whk_" + randomBytes(32).toString("base64url");
  return { secret, hash: hashApiKey(secret) };
}

/** The hash a presented secret is looked up by; undefined when it is not shaped as a key at all. */
export function lookupHash(secret: string): string | undefined {
  return API_KEY_PATTERN.test(secret) ? hashApiKey(secret) : undefined;
}
