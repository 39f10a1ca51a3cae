// The Lua scripts (scripts/*.lua), read once at load, and how they are sent to each shard (README.md "Scripts").
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { acrossSlots, type Redis } from "../redis.ts";

const read = (name: string) => readFileSync(join(import.meta.dir, "scripts", `${name}.lua`), "utf8");
const LIB = read("lib");
/** The writers, the sweep and the load share lib.lua's functions. */
const withLib = (name: string) => `${LIB}\n${read(name)}`;

const SCRIPTS = {
  APPLY: withLib("apply"),
  LOAD: withLib("load"),
  SET_META: withLib("set-meta"),
  DROP_SUB: withLib("drop-sub"),
  SET_KEY: withLib("set-key"),
  SET_POS: withLib("set-pos"),
  SWEEP: withLib("sweep"),
  LOOKUP: read("lookup"),
  VERIFY: read("verify"),
  BEGIN_BUILD: read("begin-build"),
  FINISH_BUILD: read("finish-build"),
} as const;

export type ScriptName = keyof typeof SCRIPTS;

const sha = (s: string) => createHash("sha1").update(s).digest("hex");
const SHAS = Object.fromEntries(Object.entries(SCRIPTS).map(([k, v]) => [k, sha(v)])) as Record<ScriptName, string>;

export type Arg = string | number;

/** One script on one shard: KEYS[1] = `key` (the shard's state key, so a cluster routes it), ARGV = `args`. */
export interface ScriptCall {
  name: ScriptName;
  key: string;
  args: Arg[];
}

export async function run(redis: Redis, name: ScriptName, key: string, args: Arg[]): Promise<unknown> {
  try {
    return await redis.evalsha(SHAS[name], 1, key, ...args);
  } catch (err) {
    if (!String((err as Error)?.message ?? err).includes("NOSCRIPT")) throw err;
    return await redis.eval(SCRIPTS[name], 1, key, ...args);
  }
}

/**
 * Runs scripts on several shards in one round trip per Redis node (common/redis.ts acrossSlots); a node that has
 * not cached a script yet gets it once more with EVAL. Answers in order; the first error is thrown.
 */
export async function runAll(redis: Redis, calls: readonly ScriptCall[]): Promise<unknown[]> {
  if (calls.length === 0) return [];
  if (calls.length === 1) return [await run(redis, calls[0]!.name, calls[0]!.key, calls[0]!.args)];
  const pipe = acrossSlots(redis);
  for (const c of calls) pipe.evalsha(SHAS[c.name], 1, c.key, ...c.args);
  const replies = (await pipe.exec()) ?? [];
  return Promise.all(
    replies.map(async ([err, value], i) => {
      if (!err) return value;
      if (!String(err.message ?? err).includes("NOSCRIPT")) throw err;
      const c = calls[i]!;
      return redis.eval(SCRIPTS[c.name], 1, c.key, ...c.args);
    }),
  );
}
