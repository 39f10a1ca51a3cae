// A destination's answer is decoded only as far as the stored limit (deliverer/answer-body.ts); what it decodes is
// what the destination meant, whichever coding it used.
import { describe, expect, test } from "bun:test";
import * as zlib from "node:zlib";
import { readAnswer } from "../../../deliverer/answer-body.ts";

const LIMIT = 4096;
const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** The body as a stream in `chunk`-byte pieces, as a socket would hand it over. */
function streamOf(bytes: Uint8Array, chunk = 1024): ReadableStream<Uint8Array> {
  let off = 0;
  return new ReadableStream({
    pull(controller) {
      if (off >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(off, off + chunk));
      off += chunk;
    },
  });
}

const CODINGS: Record<string, (b: Buffer) => Buffer> = {
  gzip: (b) => zlib.gzipSync(b),
  deflate: (b) => zlib.deflateSync(b),
  br: (b) => zlib.brotliCompressSync(b, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } }),
  zstd: (b) => zlib.zstdCompressSync(b),
};

describe("readAnswer", () => {
  for (const [coding, encode] of Object.entries(CODINGS)) {
    test(`${coding}: a small answer decoded whole`, async () => {
      const out = await readAnswer(streamOf(encode(Buffer.from(`{"error":"no such account"} via ${coding}`))), coding, LIMIT);
      expect(text(out)).toBe(`{"error":"no such account"} via ${coding}`);
    });

    test(`${coding}: a 16 MiB bomb decoded no further than the limit`, async () => {
      const out = await readAnswer(streamOf(encode(Buffer.alloc(16 * 2 ** 20, "a"))), coding, LIMIT);
      // limit + 4 bytes: enough for the caller to cut on a character boundary and know the answer went on.
      expect(out.length).toBe(LIMIT + 4);
      expect(text(out)).toBe("a".repeat(LIMIT + 4));
    });
  }

  test("the coding's name is read case-insensitively, x-gzip is gzip", async () => {
    expect(text(await readAnswer(streamOf(zlib.gzipSync("up")), " GZIP ", LIMIT))).toBe("up");
    expect(text(await readAnswer(streamOf(zlib.gzipSync("up")), "x-gzip", LIMIT))).toBe("up");
  });

  test("raw deflate (no zlib header), as some servers send it, is decoded too", async () => {
    expect(text(await readAnswer(streamOf(zlib.deflateRawSync("raw body")), "deflate", LIMIT))).toBe("raw body");
  });

  test("a corrupt stream keeps what it decoded before the damage", async () => {
    // Hex text compresses to about half, so its gzip spans several 1,024-byte reads; a wrong CRC in the trailer
    // fails the last one. What the earlier reads decoded is kept; nothing throws.
    const body = Buffer.from(crypto.getRandomValues(new Uint8Array(1500))).toString("hex");
    const bytes = zlib.gzipSync(body);
    bytes.writeUInt32LE((bytes.readUInt32LE(bytes.length - 8) ^ 1) >>> 0, bytes.length - 8);
    const out = text(await readAnswer(streamOf(bytes), "gzip", LIMIT));
    expect(out.length).toBeGreaterThan(0);
    expect(body.startsWith(out)).toBe(true);
  });

  test("an unknown or stacked coding is kept as sent, cut at the limit", async () => {
    expect(text(await readAnswer(streamOf(Buffer.from("as sent")), "compress", LIMIT))).toBe("as sent");
    const stacked = zlib.brotliCompressSync(zlib.gzipSync(Buffer.alloc(1 << 20, "a")));
    expect((await readAnswer(streamOf(stacked), "gzip, br", LIMIT)).length).toBeLessThanOrEqual(LIMIT + 4);
  });

  test("identity and no coding: the bytes, cut at the limit", async () => {
    expect((await readAnswer(streamOf(Buffer.alloc(100_000, "y")), null, LIMIT)).length).toBe(LIMIT + 4);
    expect(text(await readAnswer(streamOf(Buffer.from("plain")), "identity", LIMIT))).toBe("plain");
    expect((await readAnswer(null, "gzip", LIMIT)).length).toBe(0);
    expect((await readAnswer(streamOf(new Uint8Array(0)), "gzip", LIMIT)).length).toBe(0);
  });
});
