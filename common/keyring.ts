// APP_SECRET as a keyring: "k2:BASE64,k1:BASE64", newest first. The newest key seals every new value and signs
// every page token; every key in the ring still opens and verifies, so a new key can be rolled out first and the
// stored values re-sealed under it afterwards (`bun run secrets rotate`) before the old key is dropped. A bare
// base64 value (the one-key form of old) is the key "k0". A sealed value names its key ("v2.<key id>.<body>") and
// is bound to its row by AES-GCM's associated data, so a value copied onto another row does not open there.
// Values sealed before key ids ("v1.<body>", no associated data) still open under the key that sealed them.
import { deriveKeys, gcmOpen, gcmSeal } from "./crypto.ts";

export const LEGACY_KEY_ID = "k0";
const KEY_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;
const V1 = "v1.";
const V2 = "v2.";

export interface RingKey {
  id: string;
  tokenKey: Buffer;
  encryptionKey: Buffer;
}

/** Page-token keys, newest first: the first signs, any verifies (common/page-token.ts). */
export type TokenKeys = readonly Buffer[];

/** A sealed value that no key of the ring opens for this row (another key, another row, or altered). */
export class UnreadableSecretError extends Error {
  override name = "UnreadableSecretError";
}

/**
 * The associated data binding a sealed value to its row: the column's kind and the row's identity, unambiguous
 * whatever characters the parts hold.
 */
export function rowBinding(kind: string, ...identity: string[]): string {
  return JSON.stringify([kind, ...identity]);
}

/** Parses APP_SECRET's keyring syntax; throws a message naming the faulty entry. */
export function parseKeyring(text: string): RingKey[] {
  const entries = text.split(",").map((s) => s.trim());
  if (entries.some((e) => e === "")) throw new Error("APP_SECRET: empty entry in the key list (expected KEY_ID:BASE64[,KEY_ID:BASE64...])");
  const keys: RingKey[] = [];
  for (const entry of entries) {
    const colon = entry.indexOf(":");
    const id = colon < 0 ? LEGACY_KEY_ID : entry.slice(0, colon);
    const material = colon < 0 ? entry : entry.slice(colon + 1);
    if (!KEY_ID.test(id)) throw new Error(`APP_SECRET: "${id}" is not a key id (1 to 32 letters, digits, '_' or '-')`);
    if (keys.some((k) => k.id === id)) throw new Error(`APP_SECRET: key id "${id}" appears twice`);
    let derived;
    try {
      derived = deriveKeys(material);
    } catch (err) {
      throw new Error(`APP_SECRET key "${id}": ${(err as Error).message}`);
    }
    keys.push({ id, ...derived });
  }
  return keys;
}

export class Keyring {
  /** Newest first. */
  readonly keys: readonly RingKey[];

  constructor(keys: readonly RingKey[]) {
    if (keys.length === 0) throw new Error("a keyring needs at least one key");
    this.keys = keys;
  }

  static parse(text: string): Keyring {
    return new Keyring(parseKeyring(text));
  }

  get newest(): RingKey {
    return this.keys[0]!;
  }

  get tokenKeys(): TokenKeys {
    return this.keys.map((k) => k.tokenKey);
  }

  /** "v2.<newest key id>." + AES-256-GCM of `plaintext` with `binding` (rowBinding) as associated data. */
  seal(plaintext: string, binding: string): string {
    return `${V2}${this.newest.id}.${gcmSeal(this.newest.encryptionKey, plaintext, binding)}`;
  }

  /** The plaintext of a value sealed for the row `binding` names; UnreadableSecretError otherwise. */
  open(sealed: string, binding: string): string {
    if (sealed.startsWith(V2)) {
      const dot = sealed.indexOf(".", V2.length);
      const id = dot < 0 ? "" : sealed.slice(V2.length, dot);
      const key = this.keys.find((k) => k.id === id);
      if (!key) throw new UnreadableSecretError(`sealed under key "${id}", which APP_SECRET does not hold`);
      try {
        return gcmOpen(key.encryptionKey, sealed.slice(dot + 1), binding);
      } catch {
        throw new UnreadableSecretError(`a value sealed under key "${id}" does not open for this row (moved from another row, or altered)`);
      }
    }
    if (sealed.startsWith(V1)) {
      // No key id and no row binding: whichever key sealed it; AES-GCM's tag tells the right one.
      for (const key of [...this.keys].reverse()) {
        try {
          return gcmOpen(key.encryptionKey, sealed.slice(V1.length));
        } catch {
          // another key
        }
      }
      throw new UnreadableSecretError("a value sealed before key ids opens under no key of APP_SECRET");
    }
    throw new UnreadableSecretError("unknown ciphertext version");
  }

  /** Whether `sealed` is already under the newest key (with its row binding). */
  isCurrent(sealed: string): boolean {
    return sealed.startsWith(`${V2}${this.newest.id}.`);
  }
}

/** The key id a sealed value names; "v1" for a value sealed before key ids. */
export function sealedKeyId(sealed: string): string {
  if (sealed.startsWith(V1)) return "v1";
  if (!sealed.startsWith(V2)) return "unknown";
  const dot = sealed.indexOf(".", V2.length);
  return dot < 0 ? "unknown" : sealed.slice(V2.length, dot);
}
