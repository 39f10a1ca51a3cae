// Public ids are a prefix plus a ULID (time-sortable, 26 Crockford base32 characters): docs/CONTRACT.md "HTTP conventions".
import { monotonicFactory } from "ulid";

const nextUlid = monotonicFactory();

export type IdPrefix = "sub" | "evt" | "key" | "att" | "bf";

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${nextUlid()}`;
}

const ULID = "[0-9A-HJKMNP-TV-Z]{26}";
const patterns: Record<IdPrefix, RegExp> = {
  sub: new RegExp(`^sub_${ULID}$`),
  evt: new RegExp(`^evt_${ULID}$`),
  key: new RegExp(`^key_${ULID}$`),
  att: new RegExp(`^att_${ULID}$`),
  bf: new RegExp(`^bf_${ULID}$`),
};

/** A malformed id is simply not found (docs/CONTRACT.md): callers turn `false` into 404. */
export function isId(prefix: IdPrefix, value: string): boolean {
  return patterns[prefix].test(value);
}
