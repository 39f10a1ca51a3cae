// Who calls internal RPCs and the variables carrying their credentials: a leaf both config.ts and internal-auth.ts
// read (the allow-lists themselves live in internal-auth.ts).
/** The services that call internal RPCs; `operator` is a person's tool (key management, index rebuilds). */
export const INTERNAL_CALLERS = ["gateway", "matcher", "deliverer", "operator"] as const;
export type InternalCaller = (typeof INTERNAL_CALLERS)[number];
/** The root INTERNAL_TOKEN presented as is: every method, only while no per-caller credential is configured. */
export const LEGACY_CALLER = "legacy";
export type Caller = InternalCaller | typeof LEGACY_CALLER;

export function isInternalCaller(value: string): value is InternalCaller {
  return (INTERNAL_CALLERS as readonly string[]).includes(value);
}

/** The environment variable carrying a caller's token (its digest: the same name with `_SHA256`). */
export function tokenVariable(caller: InternalCaller): string {
  return `INTERNAL_TOKEN_${caller.toUpperCase()}`;
}
