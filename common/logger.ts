// Structured JSON logs, one line per record. Secrets (signing secrets, API keys) are masked on the way out,
// whatever the caller passed: the last line of defence behind "never log a secret".

export type LogLevel = "debug" | "info" | "warn" | "error";
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

// whsec_ signing secrets and whk_ API keys, wherever they appear inside a string.
const SECRET_PATTERN = /\b(whsec|whk)_[A-Za-z0-9+/=_-]{8,}/g;

function redact(text: string): string {
  return text.replace(SECRET_PATTERN, "$1_[REDACTED]");
}

type Sink = (line: string) => void;
let sink: Sink = (line) => process.stdout.write(line + "\n");
let threshold: number = RANK[(process.env.LOG_LEVEL as LogLevel) ?? "info"] ?? RANK.info;

/** Tests capture every log line through this; it returns the previous sink so it can be restored. */
export function setLogSink(next: Sink): Sink {
  const prev = sink;
  sink = next;
  return prev;
}

/** Returns the previous level, so a test can put it back. */
export function setLogLevel(level: LogLevel): LogLevel {
  const prev = (Object.keys(RANK) as LogLevel[]).find((l) => RANK[l] === threshold) ?? "info";
  threshold = RANK[level];
  return prev;
}

// A failed query's error (drizzle's DrizzleQueryError) spells out every parameter after "params:" in its message and
// stack: inserted rows with their encrypted secrets, descriptions, URLs. Logs keep the query text and drop the values.
const QUERY_PARAMS = /\nparams: [\s\S]*?(?=\n {4}at |$)/;
const PARAMS_OMITTED = "\nparams: [omitted]";

function withoutParams(text: string | undefined): string | undefined {
  return text?.replace(QUERY_PARAMS, PARAMS_OMITTED);
}

function serializeError(err: unknown, depth = 0): unknown {
  if (!(err instanceof Error)) return err;
  const out: Record<string, unknown> = { name: err.name, message: withoutParams(err.message), stack: withoutParams(err.stack) };
  // The cause says why the query failed (the driver's error); its own fields (detail, where) may quote values, so
  // only its name and message are kept.
  if (err.cause !== undefined && depth < 3) out.cause = serializeError(err.cause, depth + 1);
  return out;
}

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export function createLogger(base: Record<string, unknown> = {}): Logger {
  const write = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[level] < threshold) return;
    const record: Record<string, unknown> = { time: new Date().toISOString(), level, msg, ...base, ...fields };
    if ("err" in record) record.err = serializeError(record.err);
    sink(redact(JSON.stringify(record)));
  };
  return {
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
    child: (fields) => createLogger({ ...base, ...fields }),
  };
}

export const log = createLogger();
