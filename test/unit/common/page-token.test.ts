// The paging rule of every list (common/page-token.ts): limit bounds and their error, the signed keyset token, a
// cursor of the wrong shape under a valid signature, and the page built from limit + 1 rows.
import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { ApiError } from "../../../common/contract/index.ts";
import { decodePageToken, encodePageToken, pageLimit, pageOf, queryPageLimit, type PageScope } from "../../../common/page-token.ts";

const KEY = [randomBytes(32)];
const SCOPE: PageScope = { list: "events:", keyId: "key_1", parent: "sub_1" };
const isCursor = (c: unknown): c is { n: number } => typeof c === "object" && c !== null && typeof (c as { n?: unknown }).n === "number";

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof ApiError ? err.code : "not an ApiError";
  }
  return undefined;
}

describe("limit", () => {
  test("RPC side: 0 is the default 50, above 200 is clamped, negative is invalid_request", () => {
    expect(pageLimit(0)).toBe(50);
    expect(pageLimit(1)).toBe(1);
    expect(pageLimit(200)).toBe(200);
    expect(pageLimit(5_000)).toBe(200);
    expect(codeOf(() => pageLimit(-1))).toBe("invalid_request");
  });

  test("HTTP side: absent is 0 (the RPC's default), below 1 or fractional is invalid_request, above 200 is clamped", () => {
    expect(queryPageLimit(undefined)).toBe(0);
    expect(queryPageLimit(7)).toBe(7);
    expect(queryPageLimit(201)).toBe(200);
    expect(codeOf(() => queryPageLimit(0))).toBe("invalid_request");
    expect(codeOf(() => queryPageLimit(1.5))).toBe("invalid_request");
  });
});

describe("page token", () => {
  test("round trip; another list, an altered token or a cursor of the wrong shape is invalid_pagination_token", () => {
    const token = encodePageToken(KEY, SCOPE, { n: 3 });
    expect(decodePageToken(KEY, SCOPE, token, isCursor)).toEqual({ n: 3 });
    expect(decodePageToken(KEY, SCOPE, "", isCursor)).toBeUndefined();
    expect(codeOf(() => decodePageToken(KEY, { ...SCOPE, parent: "sub_2" }, token, isCursor))).toBe("invalid_pagination_token");
    expect(codeOf(() => decodePageToken(KEY, SCOPE, token.slice(0, -2) + "AA", isCursor))).toBe("invalid_pagination_token");
    const wrongShape = encodePageToken(KEY, SCOPE, { n: "3" });
    expect(codeOf(() => decodePageToken(KEY, SCOPE, wrongShape, isCursor))).toBe("invalid_pagination_token");
  });

  test("pageOf: the first `limit` rows, and a token after the last of them only when a further row was read", () => {
    const rows = [1, 2, 3].map((n) => ({ n }));
    const full = pageOf(KEY, SCOPE, rows, 2, (last) => ({ n: last.n }));
    expect(full.items).toEqual([{ n: 1 }, { n: 2 }]);
    expect(decodePageToken(KEY, SCOPE, full.nextPageToken, isCursor)).toEqual({ n: 2 });
    const last = pageOf(KEY, SCOPE, rows, 3, (r) => ({ n: r.n }));
    expect(last.items).toHaveLength(3);
    expect(last.nextPageToken).toBe("");
  });
});
