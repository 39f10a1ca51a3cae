// APP_SECRET as a keyring (common/keyring.ts): its syntax, the newest key sealing and signing while every key opens
// and verifies, values sealed before key ids, and the row binding: a sealed value copied onto another row is refused.
import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { gcmSeal } from "../../../common/crypto.ts";
import { Keyring, parseKeyring, rowBinding, sealedKeyId, UnreadableSecretError } from "../../../common/keyring.ts";
import { loadConfig } from "../../../common/config.ts";
import { decodePageToken, encodePageToken, type PageScope } from "../../../common/page-token.ts";
import { ApiError } from "../../../common/contract/index.ts";

const material = () => randomBytes(32).toString("base64");
const OLD = material();
const NEW = material();
const ROW_A = rowBinding("subscriptions.secret", "sub_A");
const ROW_B = rowBinding("subscriptions.secret", "sub_B");

function errorOf(fn: () => unknown): Error | undefined {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  return undefined;
}

describe("syntax", () => {
  test("KEY_ID:BASE64 entries, newest first; a bare value is the key k0", () => {
    expect(parseKeyring(`k2:${NEW},k1:${OLD}`).map((k) => k.id)).toEqual(["k2", "k1"]);
    expect(parseKeyring(OLD).map((k) => k.id)).toEqual(["k0"]);
    expect(parseKeyring(`k1:${NEW}, ${OLD}`).map((k) => k.id)).toEqual(["k1", "k0"]);
    // The same material derives the same keys whatever its id: naming the old bare value changes nothing stored.
    expect(parseKeyring(`legacy:${OLD}`)[0]!.encryptionKey.equals(parseKeyring(OLD)[0]!.encryptionKey)).toBe(true);
  });

  test("refused: a short key, a repeated id, a bad id, an empty entry; config refuses them at load", () => {
    expect(errorOf(() => parseKeyring(`k1:${Buffer.alloc(16).toString("base64")}`))?.message).toContain('key "k1"');
    expect(errorOf(() => parseKeyring(`k1:${NEW},k1:${OLD}`))?.message).toContain("twice");
    expect(errorOf(() => parseKeyring(`${NEW},${OLD}`))?.message).toContain("twice");
    expect(errorOf(() => parseKeyring(`k.1:${NEW}`))?.message).toContain("not a key id");
    expect(errorOf(() => parseKeyring(`k1:${NEW},`))?.message).toContain("empty entry");
    expect(() => loadConfig({ APP_SECRET: `k1:${NEW},k1:${OLD}` })).toThrow("twice");
    expect(loadConfig({ APP_SECRET: `k1:${NEW},k0:${OLD}` }).appSecret).toBe(`k1:${NEW},k0:${OLD}`);
  });
});

describe("sealing", () => {
  test("the newest key seals, naming itself; a value sealed under an older key still opens and is not current", () => {
    const before = Keyring.parse(`k1:${OLD}`);
    const after = Keyring.parse(`k2:${NEW},k1:${OLD}`);
    const old = before.seal("whsec_old", ROW_A);
    expect(old).toStartWith("v2.k1.");
    expect(sealedKeyId(old)).toBe("k1");
    expect(after.open(old, ROW_A)).toBe("whsec_old");
    expect(after.isCurrent(old)).toBe(false);
    const fresh = after.seal("whsec_new", ROW_A);
    expect(fresh).toStartWith("v2.k2.");
    expect(after.isCurrent(fresh)).toBe(true);
    // The old key dropped: what it sealed is refused, naming the missing key.
    const dropped = errorOf(() => Keyring.parse(`k2:${NEW}`).open(old, ROW_A));
    expect(dropped).toBeInstanceOf(UnreadableSecretError);
    expect(dropped!.message).toContain('"k1"');
  });

  test("a value copied onto another row, or altered, is refused", () => {
    const ring = Keyring.parse(`k1:${NEW}`);
    const a = ring.seal("whsec_a", ROW_A);
    expect(ring.open(a, ROW_A)).toBe("whsec_a");
    expect(errorOf(() => ring.open(a, ROW_B))).toBeInstanceOf(UnreadableSecretError);
    expect(errorOf(() => ring.open(a, rowBinding("brokers.url", "sub_A")))).toBeInstanceOf(UnreadableSecretError);
    const flipped = a.slice(0, -2) + (a.at(-2) === "A" ? "B" : "A") + a.at(-1);
    expect(errorOf(() => ring.open(flipped, ROW_A))).toBeInstanceOf(UnreadableSecretError);
    // Under another key id of the same material: the id is checked before anything is opened.
    expect(errorOf(() => ring.open(a.replace("v2.k1.", "v2.k9."), ROW_A))).toBeInstanceOf(UnreadableSecretError);
  });

  test("values sealed before key ids (v1, no row binding) open under whichever key sealed them", () => {
    const v1 = "v1." + gcmSeal(parseKeyring(OLD)[0]!.encryptionKey, "whsec_legacy");
    expect(sealedKeyId(v1)).toBe("v1");
    expect(Keyring.parse(OLD).open(v1, ROW_A)).toBe("whsec_legacy");
    expect(Keyring.parse(`k2:${NEW},k1:${OLD}`).open(v1, ROW_B)).toBe("whsec_legacy");
    expect(Keyring.parse(`k2:${NEW},k1:${OLD}`).isCurrent(v1)).toBe(false);
    expect(errorOf(() => Keyring.parse(`k2:${NEW}`).open(v1, ROW_A))).toBeInstanceOf(UnreadableSecretError);
  });

  test("row bindings are unambiguous whatever the parts hold", () => {
    expect(rowBinding("t", "a:b", "c")).not.toBe(rowBinding("t", "a", "b:c"));
    expect(rowBinding("t", "a\nb")).not.toBe(rowBinding("t", "a", "b"));
  });
});

describe("page tokens", () => {
  const scope: PageScope = { list: "subscriptions", keyId: "key_1", parent: "" };
  const isCursor = (c: unknown): c is { n: number } => typeof (c as { n?: unknown })?.n === "number";

  test("the newest key signs; a token signed before the rollout still verifies; one signed by no key of the ring does not", () => {
    const before = Keyring.parse(`k1:${OLD}`);
    const after = Keyring.parse(`k2:${NEW},k1:${OLD}`);
    const old = encodePageToken(before.tokenKeys, scope, { n: 1 });
    expect(decodePageToken(after.tokenKeys, scope, old, isCursor)).toEqual({ n: 1 });
    const fresh = encodePageToken(after.tokenKeys, scope, { n: 2 });
    expect(decodePageToken(Keyring.parse(`k2:${NEW}`).tokenKeys, scope, fresh, isCursor)).toEqual({ n: 2 });
    const err = errorOf(() => decodePageToken(before.tokenKeys, scope, fresh, isCursor));
    expect(err instanceof ApiError ? err.code : err).toBe("invalid_pagination_token");
  });
});
