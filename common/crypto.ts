// Keys derived from one APP_SECRET key: one signs page tokens, one encrypts secrets at rest (AES-256-GCM). The
// keyring (common/keyring.ts) holds several and decides which one seals and which ones open.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto";

export interface AppKeys {
  tokenKey: Buffer;
  encryptionKey: Buffer;
}

/** The least key material accepted: AES-256 and HMAC-SHA-256 want 32 bytes of entropy behind them. */
export const MIN_APP_SECRET_BYTES = 32;

export function deriveKeys(appSecretBase64: string): AppKeys {
  const ikm = Buffer.from(appSecretBase64, "base64");
  if (ikm.length < MIN_APP_SECRET_BYTES) throw new Error(`APP_SECRET must be base64 of at least ${MIN_APP_SECRET_BYTES} bytes`);
  const derive = (info: string) => Buffer.from(hkdfSync("sha256", ikm, Buffer.alloc(0), info, 32));
  return { tokenKey: derive("tron-webhooks page tokens v1"), encryptionKey: derive("tron-webhooks secrets at rest v1") };
}

/** base64url(iv | tag | ciphertext); `aad` (associated data) must be given again to open it. */
export function gcmSeal(key: Buffer, plaintext: string, aad?: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  if (aad !== undefined) cipher.setAAD(Buffer.from(aad, "utf8"));
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url");
}

/** The plaintext of gcmSeal's output; throws when the key, the associated data or the bytes differ. */
export function gcmOpen(key: Buffer, sealed: string, aad?: string): string {
  const raw = Buffer.from(sealed, "base64url");
  if (raw.length < 28) throw new Error("ciphertext too short");
  const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
  if (aad !== undefined) decipher.setAAD(Buffer.from(aad, "utf8"));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
}

export function hmac(key: Buffer, data: string): Buffer {
  return createHmac("sha256", key).update(data).digest();
}

export function safeEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export function sha256Hex(data: string | Uint8Array): string {
  return new Bun.CryptoHasher("sha256").update(data).digest("hex");
}
