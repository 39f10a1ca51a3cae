// Keys derived from APP_SECRET: one signs page tokens, one encrypts secrets at rest (AES-256-GCM).
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto";

export interface AppKeys {
  tokenKey: Buffer;
  encryptionKey: Buffer;
}

export function deriveKeys(appSecretBase64: string): AppKeys {
  const ikm = Buffer.from(appSecretBase64, "base64");
  if (ikm.length < 32) throw new Error("APP_SECRET must be base64 of at least 32 bytes");
  const derive = (info: string) => Buffer.from(hkdfSync("sha256", ikm, Buffer.alloc(0), info, 32));
  return { tokenKey: derive("tron-webhooks page tokens v1"), encryptionKey: derive("tron-webhooks secrets at rest v1") };
}

/** "v1." + base64url(iv | tag | ciphertext). */
export function encrypt(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return "v1." + Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url");
}

export function decrypt(key: Buffer, sealed: string): string {
  if (!sealed.startsWith("v1.")) throw new Error("unknown ciphertext version");
  const raw = Buffer.from(sealed.slice(3), "base64url");
  const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
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
