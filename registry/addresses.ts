// Address filters (docs/CONTRACT.md "Address filters"): PATCH (per-item results), PUT (all or nothing), the keyset list,
// and the watch-index rebuild RPC. Each change runs in one transaction under the subscription's row lock (so
// concurrent PATCHes of one subscription serialize), in bulk SQL (unnest of arrays, never one INSERT per address),
// and reaches the Redis watch index before COMMIT (registry/watch-index.ts explains the ordering).
import { create } from "@bufbuild/protobuf";
import { eq, sql as dsql } from "drizzle-orm";
import type { AddressEntry } from "../gen/webhooks/registry/v1/registry_pb.ts";
import { PatchAddressesResponseSchema, SubscriptionResponseSchema } from "../gen/webhooks/registry/v1/registry_pb.ts";
import { isChainId, TRON_CHAINS } from "../common/config.ts";
import { ADDRESS_CHANGE_BUDGET_MS, storeDeadline } from "../common/deadlines.ts";
import { ApiError } from "../common/errors.ts";
import { isId } from "../common/ids.ts";
import { decodePageToken, encodePageToken, pageLimit, type PageScope } from "../common/page-token.ts";
import { isBase58Address } from "../common/tron-address.ts";
import { subscriptions, type SubscriptionRow } from "./schema.ts";
import { INLINE_ADDRESSES, notFound, subscriptionMessage, type AddressRpcs } from "./service.ts";
import type { RegistryStore, RegistryTx } from "./store.ts";
import { pgTextArray, subscriptionMeta, type KeyState, type WatchIndex } from "./watch-index.ts";

/** Addresses per request: PATCH add and remove together, PUT (docs/CONTRACT.md "Limits"). */
export const MAX_ADDRESSES_PER_REQUEST = 10_000;
/** A change of 10,000 addresses against a large subscription may take longer than a plain store call. */
const CHANGE_DEADLINE_MS = storeDeadline(ADDRESS_CHANGE_BUDGET_MS);
/** Additions validated per slice while PostgreSQL inserts the previous one. */
const VALIDATION_SLICE = 2_500;

export type SkipReason = "invalid_address" | "invalid_chain" | "chain_not_enabled" | "not_found";

interface Entry {
  chainId: string;
  address: string;
}

const entryKey = (e: Entry) => `${e.chainId}\n${e.address}`;

/** The item's problem, or null when it may be applied. Chain first: an unknown chain makes the address moot. */
export function checkEntry(entry: Entry, key: KeyState): { reason: SkipReason; detail: string } | null {
  if (!isChainId(entry.chainId)) {
    return { reason: "invalid_chain", detail: `"${entry.chainId}" is not one of ${TRON_CHAINS.join(", ")}.` };
  }
  if (!isBase58Address(entry.address)) {
    return {
      reason: "invalid_address",
      detail: "Not a base58check TRON address (34 characters, version byte 0x41, valid checksum).",
    };
  }
  if (!key.chains.includes(entry.chainId)) {
    return { reason: "chain_not_enabled", detail: `${entry.chainId} is not enabled for this API key.` };
  }
  return null;
}

function limitExceeded(message: string, detail: Record<string, unknown>): ApiError {
  return new ApiError("addresses_limit_exceeded", message, detail);
}

function addressesScope(keyId: string, subscriptionId: string): PageScope {
  return { list: "addresses", keyId, parent: subscriptionId };
}

interface AddressCursor {
  s: number;
}

function isCursor(value: unknown): value is AddressCursor {
  return typeof value === "object" && value !== null && Number.isSafeInteger((value as AddressCursor).s);
}

function groupByChain(entries: readonly Entry[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const e of entries) {
    let list = out.get(e.chainId);
    if (!list) out.set(e.chainId, (list = []));
    list.push(e.address);
  }
  return out;
}

export interface AddressDeps {
  store: RegistryStore;
  index: WatchIndex;
  tokenKey: Buffer;
  maxPerSubscription: number;
}

export function addressRpcs(deps: AddressDeps): AddressRpcs {
  const { store, index } = deps;

  async function keyState(tx: RegistryTx, keyId: string): Promise<KeyState> {
    const rows = (await tx.execute(
      dsql`SELECT chains, revoked_at IS NOT NULL AS revoked FROM api_keys WHERE id = ${keyId}`,
    )) as unknown as KeyState[];
    return rows[0] ?? { chains: [], revoked: true };
  }

  async function lockSubscription(tx: RegistryTx, keyId: string, id: string): Promise<SubscriptionRow> {
    const row = await store.findSubscription(tx, keyId, id, true);
    if (!row) throw notFound();
    return row;
  }

  /** Deletes entries; returns those that were there. */
  async function deleteEntries(tx: RegistryTx, id: string, entries: readonly Entry[]): Promise<Entry[]> {
    if (entries.length === 0) return [];
    return (await tx.execute(dsql`
      DELETE FROM subscription_addresses a
      USING unnest(${pgTextArray(entries.map((e) => e.chainId))}::text[], ${pgTextArray(entries.map((e) => e.address))}::text[]) AS u(c, addr)
      WHERE a.subscription_id = ${id} AND a.chain_id = u.c AND a.address = u.addr
      RETURNING a.chain_id AS "chainId", a.address`)) as unknown as Entry[];
  }

  /** Inserts entries in the given order (seq follows it); returns those that were new. */
  async function insertEntries(tx: RegistryTx, id: string, entries: readonly Entry[]): Promise<Entry[]> {
    if (entries.length === 0) return [];
    return (await tx.execute(dsql`
      INSERT INTO subscription_addresses (subscription_id, chain_id, address)
      SELECT ${id}, u.c, u.addr
      FROM unnest(${pgTextArray(entries.map((e) => e.chainId))}::text[], ${pgTextArray(entries.map((e) => e.address))}::text[]) WITH ORDINALITY AS u(c, addr, ord)
      ORDER BY u.ord
      ON CONFLICT DO NOTHING
      RETURNING chain_id AS "chainId", address`)) as unknown as Entry[];
  }

  async function touch(tx: RegistryTx, id: string, count: number): Promise<SubscriptionRow> {
    const [fresh] = await tx
      .update(subscriptions)
      .set({ addressCount: count, updatedAt: new Date() })
      .where(eq(subscriptions.id, id))
      .returning();
    return fresh!;
  }

  /** One request's index writes, made while its transaction is open. */
  interface Written {
    /** The index was written: if the transaction then fails to commit, the index must be rebuilt. */
    index: boolean;
    /** The write intent announced before the first write (null: not announced, the failure is recorded). */
    intent: Promise<string | null> | undefined;
    /** The writes so far, chained: a removal and a re-addition of the same entry must reach Redis in that order. */
    queue: Promise<void>;
  }

  const newWritten = (): Written => ({ index: false, intent: undefined, queue: Promise.resolve() });

  /** Queues one subscription's net change for the index, chain by chain; resolves once it and every earlier one are written. */
  function writeIndex(written: Written, row: SubscriptionRow, key: KeyState, added: Entry[], removed: Entry[]): Promise<void> {
    written.queue = written.queue.then(async () => {
      written.intent ??= index.announce();
      // Not announced: Redis is failing, the index is marked for a rebuild that will bring this change in.
      if ((await written.intent) === null) return;
      written.index = true;
      const addedKeys = new Set(added.map(entryKey));
      const netRemoved = removed.filter((e) => !addedKeys.has(entryKey(e)));
      const adds = groupByChain(added);
      const removes = groupByChain(netRemoved);
      for (const chainId of new Set([...adds.keys(), ...removes.keys()])) {
        await index.writeAddresses(subscriptionMeta(row), key, chainId, {
          add: adds.get(chainId) ?? [],
          remove: removes.get(chainId) ?? [],
        });
      }
    });
    return written.queue;
  }

  /**
   * Settles a request's index writes on the real outcome of its transaction, not on the deadline (which abandons a
   * transaction that may still commit): a transaction that wrote the index and then did not commit leaves the index
   * ahead of PostgreSQL, so the index is marked for a rebuild before the intent goes.
   */
  async function guardIndex<T>(written: Written, work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (err) {
      await written.queue.catch(() => {}); // a write still under way must land before the rebuild is asked for
      if (written.index) await index.recordFailure("transaction failed after its index write", err);
      throw err;
    } finally {
      if (written.intent) await index.withdraw(await written.intent);
    }
  }

  async function inline(tx: RegistryTx, row: SubscriptionRow) {
    const { items, hasMore } = await store.inlineAddresses(tx, row.id, INLINE_ADDRESSES);
    return subscriptionMessage(row, { addresses: items, hasMore });
  }

  return {
    async patchAddresses(req) {
      if (!isId("sub", req.id)) throw notFound();
      if (req.add.length === 0 && req.remove.length === 0) {
        throw new ApiError("invalid_request", "add or remove must list at least one address entry.", { param: "/add" });
      }
      const total = req.add.length + req.remove.length;
      // A missing subscription is 404 whatever the body says.
      if (!(await store.getSubscription(req.keyId, req.id))) throw notFound();
      if (total > MAX_ADDRESSES_PER_REQUEST) {
        throw limitExceeded(`A request may carry at most ${MAX_ADDRESSES_PER_REQUEST} address entries (add and remove together).`, {
          limit: MAX_ADDRESSES_PER_REQUEST,
          count: total,
        });
      }

      const written = newWritten();
      return guardIndex(
        written,
        store.write(async (tx) => {
            const row = await lockSubscription(tx, req.keyId, req.id);
            const key = await keyState(tx, req.keyId);
            // Each side deduplicated in request order; an invalid item is skipped once.
            const dedupe = (list: readonly Entry[]) => {
              const seen = new Set<string>();
              const out: Entry[] = [];
              for (const e of list) {
                const entry = { chainId: e.chainId, address: e.address };
                const k = entryKey(entry);
                if (!seen.has(k)) {
                  seen.add(k);
                  out.push(entry);
                }
              }
              return out;
            };
            const removals = dedupe(req.remove).map((entry) => ({ entry, problem: checkEntry(entry, key) }));
            const additions = dedupe(req.add);
            const validRemove = removals.filter((i) => !i.problem).map((i) => i.entry);

            // The index change follows from the request alone (adding a present entry or removing an absent one is a
            // no-op there too), so it runs beside the SQL whenever the per-subscription limit cannot be crossed;
            // otherwise only after the limit check, so a refused request never touches the index. Additions are
            // validated in slices, each slice's INSERT sent before the next is checked, so PostgreSQL works while
            // base58check runs here. Statements on the transaction run in the order they were sent.
            const overlap = row.addressCount + additions.length <= deps.maxPerSubscription;
            const queueIndex = (add: Entry[], remove: Entry[]) => void writeIndex(written, row, key, add, remove);
            if (overlap && validRemove.length > 0) queueIndex([], validRemove);
            const deletion = deleteEntries(tx, row.id, validRemove);
            deletion.catch(() => {}); // awaited below; this only keeps an early failure from going unhandled
            const addProblems = new Map<string, ReturnType<typeof checkEntry>>();
            const validAdd: Entry[] = [];
            const insertions: Promise<Entry[]>[] = [];
            for (let i = 0; i < additions.length; i += VALIDATION_SLICE) {
              const slice: Entry[] = [];
              for (const entry of additions.slice(i, i + VALIDATION_SLICE)) {
                const problem = checkEntry(entry, key);
                if (problem) addProblems.set(entryKey(entry), problem);
                else slice.push(entry);
              }
              validAdd.push(...slice);
              const insertion = insertEntries(tx, row.id, slice);
              insertion.catch(() => {});
              insertions.push(insertion);
              if (overlap && slice.length > 0) queueIndex(slice, []);
              await new Promise((resolve) => setImmediate(resolve)); // let the statement go out
            }
            const removed = await deletion;
            const removedKeys = new Set(removed.map(entryKey));
            // Skipped items in request order: removals first (they apply first), then additions.
            const skipped: { input: Entry; reason: SkipReason; detail: string }[] = [];
            for (const { entry, problem } of removals) {
              if (problem) skipped.push({ input: entry, ...problem });
              else if (!removedKeys.has(entryKey(entry))) {
                skipped.push({ input: entry, reason: "not_found", detail: "This entry is not in the subscription's list." });
              }
            }
            for (const entry of additions) {
              const problem = addProblems.get(entryKey(entry));
              if (problem) skipped.push({ input: entry, ...problem });
            }
            const insertedKeys = new Set((await Promise.all(insertions)).flat().map(entryKey));
            const added = validAdd.filter((e) => insertedKeys.has(entryKey(e)));
            const count = row.addressCount - removed.length + added.length;
            if (count > deps.maxPerSubscription) {
              throw limitExceeded(`A subscription may watch at most ${deps.maxPerSubscription} addresses.`, {
                limit: deps.maxPerSubscription,
                count,
              });
            }
            let current = row;
            if (removed.length > 0 || added.length > 0) {
              current = await touch(tx, row.id, count);
              if (!overlap) await writeIndex(written, current, key, added, removed);
            }
            await written.queue;
            // Removals are listed in request order, like additions.
            const removedInOrder = validRemove.filter((e) => removedKeys.has(entryKey(e)));
            return create(PatchAddressesResponseSchema, {
              subscription: await inline(tx, current),
              added,
              removed: removedInOrder,
              skipped,
            });
        }, CHANGE_DEADLINE_MS),
      );
    },

    async replaceAddresses(req) {
      if (!isId("sub", req.id)) throw notFound();
      if (!(await store.getSubscription(req.keyId, req.id))) throw notFound();
      if (req.addresses.length > MAX_ADDRESSES_PER_REQUEST) {
        throw limitExceeded(`A request may carry at most ${MAX_ADDRESSES_PER_REQUEST} address entries.`, {
          limit: MAX_ADDRESSES_PER_REQUEST,
          count: req.addresses.length,
        });
      }
      const written = newWritten();
      return guardIndex(
        written,
        store.write(async (tx) => {
            const row = await lockSubscription(tx, req.keyId, req.id);
            const key = await keyState(tx, req.keyId);
            // Duplicates collapse (the first occurrence keeps its place and its index for error details).
            const wanted: Entry[] = [];
            const firstIndex: number[] = [];
            const seen = new Set<string>();
            req.addresses.forEach((e: AddressEntry, i: number) => {
              const entry = { chainId: e.chainId, address: e.address };
              const k = entryKey(entry);
              if (!seen.has(k)) {
                seen.add(k);
                wanted.push(entry);
                firstIndex.push(i);
              }
            });
            if (wanted.length > deps.maxPerSubscription) {
              throw limitExceeded(`A subscription may watch at most ${deps.maxPerSubscription} addresses.`, {
                limit: deps.maxPerSubscription,
                count: wanted.length,
              });
            }
            // "All existing addresses are removed, then the given list is applied": the new order is the body's.
            // The statements go out slice by slice while the next slice is validated; an invalid item throws and the
            // transaction rolls back, so nothing changes (the index is written only once all items passed).
            // Drizzle's query objects run again on every then(): turn each into one native promise right away.
            const quiet = <T>(query: PromiseLike<T>): Promise<T> => {
              const p = Promise.resolve(query);
              p.catch(() => {});
              return p;
            };
            const oldRows = quiet(
              tx.execute(
                dsql`SELECT chain_id AS "chainId", address FROM subscription_addresses WHERE subscription_id = ${row.id} ORDER BY seq`,
              ) as unknown as Promise<Entry[]>,
            );
            const steps: Promise<unknown>[] = [oldRows, quiet(tx.execute(dsql`DELETE FROM subscription_addresses WHERE subscription_id = ${row.id}`))];
            for (let i = 0; i < wanted.length; i += VALIDATION_SLICE) {
              const slice = wanted.slice(i, i + VALIDATION_SLICE);
              slice.forEach((entry, j) => {
                const problem = checkEntry(entry, key);
                if (problem) throw new ApiError(problem.reason, problem.detail, { index: firstIndex[i + j], input: entry });
              });
              steps.push(quiet(insertEntries(tx, row.id, slice)));
              await new Promise((resolve) => setImmediate(resolve)); // let the statement go out
            }
            const old = await oldRows;
            const same = old.length === wanted.length && old.every((e, i) => entryKey(e) === entryKey(wanted[i]!));
            let current = row;
            if (same) {
              await Promise.all(steps); // the same rows again, in the same order: nothing changed
            } else {
              const oldKeys = new Set(old.map(entryKey));
              const wantedKeys = new Set(wanted.map(entryKey));
              const indexWrite = writeIndex(
                written,
                row,
                key,
                wanted.filter((e) => !oldKeys.has(entryKey(e))),
                old.filter((e) => !wantedKeys.has(entryKey(e))),
              );
              await Promise.all(steps);
              current = await touch(tx, row.id, wanted.length);
              await indexWrite;
            }
            return create(SubscriptionResponseSchema, { subscription: await inline(tx, current) });
        }, CHANGE_DEADLINE_MS),
      );
    },

    async listAddresses(req) {
      if (!isId("sub", req.id)) throw notFound();
      const limit = pageLimit(req.limit);
      if (!(await store.getSubscription(req.keyId, req.id))) throw notFound();
      const scope = addressesScope(req.keyId, req.id);
      const cursor = decodePageToken(deps.tokenKey, scope, req.pageToken, isCursor);
      const after = cursor?.s ?? 0;
      const rows = await store.run(
        (db) =>
          db.execute(dsql`
            SELECT chain_id AS "chainId", address, seq FROM subscription_addresses
            WHERE subscription_id = ${req.id} AND seq > ${after}
            ORDER BY seq LIMIT ${limit + 1}`) as unknown as Promise<(Entry & { seq: number | string })[]>,
      );
      const items = rows.slice(0, limit);
      const last = items.at(-1);
      const nextPageToken =
        rows.length > limit && last ? encodePageToken(deps.tokenKey, scope, { s: Number(last.seq) } satisfies AddressCursor) : "";
      return { items: items.map((r) => ({ chainId: r.chainId, address: r.address })), nextPageToken };
    },

    async rebuildWatchIndex(req) {
      for (const c of req.chainIds) {
        if (!isChainId(c)) throw new ApiError("invalid_chain", `Unknown chain "${c}".`, { chain: c });
      }
      const result = await index.rebuild(req.chainIds.length > 0 ? req.chainIds : TRON_CHAINS);
      return { addresses: BigInt(result.addresses), subscriptions: BigInt(result.subscriptions) };
    },
  };
}
