// A destination's answer body, read and decoded no further than the stored limit. Deliveries ask for identity and
// fetch with decompression off; a destination that compresses anyway is decoded as a stream that stops at the limit,
// so a few hundred bytes declaring a gigabyte of gzip, deflate, br or zstd cost the deliverer a few kilobytes.
import type { Transform } from "node:stream";
import { constants, createBrotliDecompress, createGunzip, createInflate, createInflateRaw, createZstdDecompress } from "node:zlib";

/** Encoded bytes read at most for one answer: a stream that decodes to nothing is not read until the deadline. */
export const ENCODED_READ_LIMIT = 1024 * 1024;

/** Decoder output chunks: small, so a bomb's first chunk is not much larger than the limit it is cut at. */
const DECODER_CHUNK = 16 * 1024;

type Decoder = (first: Uint8Array) => Transform;

interface ChunkReader {
  read(): Promise<{ done: boolean; value?: Uint8Array | undefined }>;
}

const DECODERS: Record<string, Decoder> = {
  gzip: () => createGunzip({ chunkSize: DECODER_CHUNK }),
  "x-gzip": () => createGunzip({ chunkSize: DECODER_CHUNK }),
  // "deflate" means the zlib format, but some servers send raw deflate; the zlib header tells them apart.
  deflate: (first) => (isZlibHeader(first) ? createInflate({ chunkSize: DECODER_CHUNK }) : createInflateRaw({ chunkSize: DECODER_CHUNK })),
  br: () => createBrotliDecompress({ chunkSize: DECODER_CHUNK }),
  // A zstd frame names its window and the decoder allocates it; 8 MiB (2^23) is the most HTTP's zstd coding asks a
  // decoder to accept (RFC 9659), instead of the library's 128 MiB.
  zstd: () => createZstdDecompress({ chunkSize: DECODER_CHUNK, params: { [constants.ZSTD_d_windowLogMax]: 23 } }),
};

function isZlibHeader(b: Uint8Array): boolean {
  return b.length < 2 || ((b[0]! & 0x0f) === 8 && ((b[0]! << 8) | b[1]!) % 31 === 0);
}

/**
 * At most `limit` + 4 bytes of the answer (the caller cuts at `limit` on a character boundary), decoded when its
 * Content-Encoding is one we know; an unknown or stacked coding is kept as sent, cut the same way.
 */
export async function readAnswer(body: ReadableStream<Uint8Array> | null, contentEncoding: string | null, limit: number): Promise<Uint8Array> {
  if (!body) return new Uint8Array(0);
  const coding = (contentEncoding ?? "").trim().toLowerCase();
  const decoder = DECODERS[coding];
  const reader = body.getReader();
  try {
    return decoder ? await decodeLimited(reader, decoder, limit) : await readLimited(reader, limit);
  } finally {
    // Stop the transfer: what is past the limit is never read.
    await reader.cancel().catch(() => {});
  }
}

async function readLimited(reader: ChunkReader, limit: number): Promise<Uint8Array> {
  const out = new Collector(limit);
  while (!out.full) {
    const { done, value } = await reader.read();
    if (done || !value) break;
    out.add(value);
  }
  return out.bytes();
}

async function decodeLimited(reader: ChunkReader, makeDecoder: Decoder, limit: number): Promise<Uint8Array> {
  const out = new Collector(limit);
  let decoder: Transform | undefined;
  let stop!: () => void;
  // Settles when the decoder has given enough, has ended, or has failed (a corrupt stream keeps what it decoded).
  const stopped = new Promise<"stopped">((resolve) => (stop = () => resolve("stopped")));
  try {
    let read = 0;
    for (;;) {
      const next = await Promise.race([reader.read(), stopped]);
      if (next === "stopped") break;
      if (next.done || !next.value || read >= ENCODED_READ_LIMIT) {
        decoder?.end();
        if (decoder) await stopped;
        break;
      }
      read += next.value.length;
      if (!decoder) {
        decoder = makeDecoder(next.value);
        decoder.on("data", (chunk: Uint8Array) => {
          out.add(chunk);
          // Destroyed at once: the rest of the input is never inflated.
          if (out.full) {
            decoder!.destroy();
            stop();
          }
        });
        decoder.on("end", stop);
        decoder.on("error", stop);
        decoder.on("close", stop);
      }
      // The next encoded chunk is read only once this one is decoded, so the input is never buffered either.
      await Promise.race([new Promise<void>((resolve) => decoder!.write(next.value, () => resolve())), stopped]);
    }
  } finally {
    decoder?.destroy();
  }
  return out.bytes();
}

/** Keeps the first `limit` + 4 bytes of what is added (enough to tell that the answer went past the limit). */
class Collector {
  private readonly buf: Uint8Array;
  private size = 0;

  constructor(limit: number) {
    this.buf = new Uint8Array(limit + 4);
  }

  get full(): boolean {
    return this.size >= this.buf.length;
  }

  add(chunk: Uint8Array): void {
    const take = Math.min(chunk.length, this.buf.length - this.size);
    this.buf.set(chunk.subarray(0, take), this.size);
    this.size += take;
  }

  bytes(): Uint8Array {
    return this.buf.subarray(0, this.size);
  }
}
