// The public vocabulary in one place: event kinds, chains, limits and the error contract. Pure (no runtime APIs), so
// the services, the gateway's schemas and docs, and the console in the browser all import it.
export * from "./chains.ts";
export * from "./errors.ts";
export * from "./events.ts";
export * from "./limits.ts";
export * from "./words.ts";
