// Address filters (docs/CONTRACT.md "Address filters"): PATCH (per-item results), PUT (all or nothing), the keyset list,
// and the watch-index rebuild RPC. Each change runs in one transaction under the subscription's row lock (so
// concurrent PATCHes of one subscription serialize), in bulk SQL (unnest of arrays, never one INSERT per address).
// Its index change is one outbox row per chain in the same transaction (registry/watch-index/outbox.ts), and the answer
// waits until the applier wrote it to Redis (registry/watch-index/), so a 200 means the matcher matches them.
import { create } from "@bufbuild/protobuf";
import { eq, sql as dsql } from "drizzle-orm";
import type { AddressEntry } from "../gen/webhooks/registry/v1/registry_pb.ts";
import { PatchAddressesResponseSchema, SubscriptionResponseSchema } from "../gen/webhooks/registry/v1/registry_pb.ts";
import {
  ApiError,
  INLINE_ADDRESSES,
  invalidRequest,
  isChainId,
  MAX_ADDRESSES_PER_REQUEST,
  notFound,
  TRON_CHAINS,
} from "../common/contract/index.ts";
import { ADDRESS_CHANGE_BUDGET_MS, storeDeadline } from "../common/deadlines.ts";
import { isId } from "../common/ids.ts";
import type { TokenKeys } from "../common/keyring.ts";
import { decodePageToken, pageLimit, pageOf, type PageScope } from "../common/page-token.ts";
import { isBase58Address } from "../common/tron-address.ts";
import { subscriptions, type SubscriptionRow } from "./schema.ts";
import { checkAddressQuota } from "./quotas.ts";
import type { QuotaLimits } from "../common/quotas.ts";
import { subscriptionMessage, type AddressRpcs } from "./service.ts";
import type { RegistryTx } from "./db/connection.ts";
import type { RegistryStore } from "./db/store.ts";
import type { KeyState } from "./watch-index/applier.ts";
import type { WatchIndex } from "./watch-index/index.ts";
import { NO_TICKET, pgTextArray, recordIndexChanges, type IndexChange, type OutboxTicket } from "./watch-index/outbox.ts";

/** A change of 10,000 addresses against a large subscription may take longer than a plain store call. */
const CHANGE_DEADLINE_MS = storeDeadline(ADDRESS_CHANGE_BUDGET_MS);
/** Additions validated per slice while PostgreSQL inserts the previous one. */
const VALIDATION_SLICE = 2_500;

export type SkipReason = "invalid_address" | "invalid_chain" | "chain_not_enabled" | "not_found";

interface Entry {
  chainId: string;
  address: string;
}

/**
 * A set of entries, kept per chain: no "chain + address" string is built per entry (for 10,000 entries that
 * concatenation and its hashing were a visible part of a PATCH's CPU: bench api-addresses).
 */
class EntrySet {
  private readonly byChain = new Map<string, Set<string>>();
  constructor(entries: Iterable<Entry> = []) {
    for (const e of entries) this.add(e);
  }
  has(e: Entry): boolean {
    return this.byChain.get(e.chainId)?.has(e.address) ?? false;
  }
  /** Adds; false when it was there already. */
  add(e: Entry): boolean {
    let set = this.byChain.get(e.chainId);
    if (!set) this.byChain.set(e.chainId, (set = new Set()));
    if (set.has(e.address)) return false;
    set.add(e.address);
    return true;
  }
}

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
  tokenKeys: TokenKeys;
  maxPerSubscription: number;
  /** The operator's default quotas; the key's total of address entries is checked against its own (registry/quotas.ts). */
  quotas: QuotaLimits;
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
    if (!row) throw notFound("subscription");
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

  /**
   * Inserts entries in the given order (seq follows it); returns those that were there already (not inserted).
   * Usually none: the common answer is empty, where returning the inserted rows meant 10,000 rows back to parse.
   */
  async function insertEntries(tx: RegistryTx, id: string, entries: readonly Entry[]): Promise<Entry[]> {
    if (entries.length === 0) return [];
    return (await tx.execute(dsql`
      WITH u AS (
        SELECT * FROM unnest(${pgTextArray(entries.map((e) => e.chainId))}::text[], ${pgTextArray(entries.map((e) => e.address))}::text[])
          WITH ORDINALITY AS u(c, addr, ord)
      ), ins AS (
        INSERT INTO subscription_addresses (subscription_id, chain_id, address)
        SELECT ${id}, u.c, u.addr FROM u ORDER BY u.ord
        ON CONFLICT DO NOTHING
        RETURNING chain_id, address
      )
      SELECT u.c AS "chainId", u.addr AS address FROM u
      WHERE NOT EXISTS (SELECT 1 FROM ins WHERE ins.chain_id = u.c AND ins.address = u.addr)`)) as unknown as Entry[];
  }

  async function touch(tx: RegistryTx, id: string, count: number): Promise<SubscriptionRow> {
    const [fresh] = await tx
      .update(subscriptions)
      .set({ addressCount: count, updatedAt: new Date() })
      .where(eq(subscriptions.id, id))
      .returning();
    return fresh!;
  }

  /**
   * The outbox rows of one subscription's net change (registry/watch-index/outbox.ts), one row per chain however many
   * addresses: inserted last in the transaction, under the subscription's row lock. An entry both removed and added
   * is present afterwards, so it is not removed from the index.
   */
  function recordChange(tx: RegistryTx, id: string, added: readonly Entry[], removed: readonly Entry[]): Promise<OutboxTicket> {
    const adds = groupByChain(added);
    let netRemoved = removed;
    if (removed.length > 0 && added.length > 0) {
      const addedSet = new EntrySet(added);
      netRemoved = removed.filter((e) => !addedSet.has(e));
    }
    const removes = groupByChain(netRemoved);
    const changes: IndexChange[] = [];
    for (const chainId of new Set([...adds.keys(), ...removes.keys()])) {
      changes.push({ kind: "addresses", subscriptionId: id, chainId, add: adds.get(chainId) ?? [], remove: removes.get(chainId) ?? [] });
    }
    return recordIndexChanges(tx, changes);
  }

  /** The response once the index reflects the committed change (bounded: WatchIndex.settle). */
  async function settled<T>(work: Promise<{ response: T; ticket: OutboxTicket }>): Promise<T> {
    const { response, ticket } = await work;
    await index.settle(ticket);
    return response;
  }

  async function inline(tx: RegistryTx, row: SubscriptionRow) {
    const { items, hasMore } = await store.inlineAddresses(tx, row.id, INLINE_ADDRESSES);
    return subscriptionMessage(row, { addresses: items, hasMore });
  }

  return {
    async patchAddresses(req) {
      if (!isId("sub", req.id)) throw notFound("subscription");
      if (req.add.length === 0 && req.remove.length === 0) {
        throw invalidRequest("add or remove must list at least one address entry.", "/add");
      }
      const total = req.add.length + req.remove.length;
      // A missing subscription is 404 whatever the body says.
      if (!(await store.getSubscription(req.keyId, req.id))) throw notFound("subscription");
      if (total > MAX_ADDRESSES_PER_REQUEST) {
        throw limitExceeded(`A request may carry at most ${MAX_ADDRESSES_PER_REQUEST} address entries (add and remove together).`, {
          limit: MAX_ADDRESSES_PER_REQUEST,
          count: total,
        });
      }

      return settled(
        store.write(async (tx) => {
            const row = await lockSubscription(tx, req.keyId, req.id);
            const key = await keyState(tx, req.keyId);
            // Each side deduplicated in request order; an invalid item is skipped once.
            const dedupe = (list: readonly Entry[]) => {
              const seen = new EntrySet();
              const out: Entry[] = [];
              for (const e of list) {
                const entry = { chainId: e.chainId, address: e.address };
                if (seen.add(entry)) out.push(entry);
              }
              return out;
            };
            const removals = dedupe(req.remove).map((entry) => ({ entry, problem: checkEntry(entry, key) }));
            const additions = dedupe(req.add);
            const validRemove = removals.filter((i) => !i.problem).map((i) => i.entry);

            // Additions are validated in slices, each slice's INSERT sent before the next is checked, so PostgreSQL
            // works while base58check runs here. Statements on the transaction run in the order they were sent.
            const deletion = deleteEntries(tx, row.id, validRemove);
            deletion.catch(() => {}); // awaited below; this only keeps an early failure from going unhandled
            const addProblems = new Map<Entry, NonNullable<ReturnType<typeof checkEntry>>>();
            const validAdd: Entry[] = [];
            const insertions: Promise<Entry[]>[] = [];
            for (let i = 0; i < additions.length; i += VALIDATION_SLICE) {
              const slice: Entry[] = [];
              for (const entry of additions.slice(i, i + VALIDATION_SLICE)) {
                const problem = checkEntry(entry, key);
                if (problem) addProblems.set(entry, problem);
                else slice.push(entry);
              }
              validAdd.push(...slice);
              const insertion = insertEntries(tx, row.id, slice);
              insertion.catch(() => {});
              insertions.push(insertion);
              await new Promise((resolve) => setImmediate(resolve)); // let the statement go out
            }
            const removed = await deletion;
            // Every valid removal found (the usual case): no set needed to tell which.
            const removedSet = removed.length === validRemove.length ? null : new EntrySet(removed);
            const wasRemoved = (e: Entry) => removedSet === null || removedSet.has(e);
            // Skipped items in request order: removals first (they apply first), then additions.
            const skipped: { input: Entry; reason: SkipReason; detail: string }[] = [];
            for (const { entry, problem } of removals) {
              if (problem) skipped.push({ input: entry, ...problem });
              else if (!wasRemoved(entry)) {
                skipped.push({ input: entry, reason: "not_found", detail: "This entry is not in the subscription's list." });
              }
            }
            if (addProblems.size > 0) {
              for (const entry of additions) {
                const problem = addProblems.get(entry);
                if (problem) skipped.push({ input: entry, ...problem });
              }
            }
            const present = (await Promise.all(insertions)).flat();
            const presentSet = present.length === 0 ? null : new EntrySet(present);
            const added = presentSet === null ? validAdd : validAdd.filter((e) => !presentSet.has(e));
            const count = row.addressCount - removed.length + added.length;
            if (count > deps.maxPerSubscription) {
              throw limitExceeded(`A subscription may watch at most ${deps.maxPerSubscription} addresses.`, {
                limit: deps.maxPerSubscription,
                count,
              });
            }
            if (count > row.addressCount) await checkAddressQuota(tx, req.keyId, row.id, count, deps.quotas);
            let current = row;
            let ticket = NO_TICKET;
            if (removed.length > 0 || added.length > 0) {
              current = await touch(tx, row.id, count);
              ticket = await recordChange(tx, row.id, added, removed);
            }
            // Removals are listed in request order, like additions.
            const removedInOrder = removedSet === null ? validRemove : validRemove.filter(wasRemoved);
            const response = create(PatchAddressesResponseSchema, {
              subscription: await inline(tx, current),
              added,
              removed: removedInOrder,
              skipped,
            });
            return { response, ticket };
        }, CHANGE_DEADLINE_MS),
      );
    },

    async replaceAddresses(req) {
      if (!isId("sub", req.id)) throw notFound("subscription");
      if (!(await store.getSubscription(req.keyId, req.id))) throw notFound("subscription");
      if (req.addresses.length > MAX_ADDRESSES_PER_REQUEST) {
        throw limitExceeded(`A request may carry at most ${MAX_ADDRESSES_PER_REQUEST} address entries.`, {
          limit: MAX_ADDRESSES_PER_REQUEST,
          count: req.addresses.length,
        });
      }
      return settled(
        store.write(async (tx) => {
            const row = await lockSubscription(tx, req.keyId, req.id);
            const key = await keyState(tx, req.keyId);
            // Duplicates collapse (the first occurrence keeps its place and its index for error details).
            const wanted: Entry[] = [];
            const firstIndex: number[] = [];
            const wantedSet = new EntrySet();
            req.addresses.forEach((e: AddressEntry, i: number) => {
              const entry = { chainId: e.chainId, address: e.address };
              if (wantedSet.add(entry)) {
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
            // transaction rolls back, so nothing changes (its outbox row is only inserted once all items passed).
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
            const same =
              old.length === wanted.length && old.every((e, i) => e.chainId === wanted[i]!.chainId && e.address === wanted[i]!.address);
            let current = row;
            let ticket = NO_TICKET;
            await Promise.all(steps);
            if (wanted.length > row.addressCount) await checkAddressQuota(tx, req.keyId, row.id, wanted.length, deps.quotas);
            if (!same) {
              // Only the difference goes to the index: entries in both lists keep their place there.
              const oldSet = new EntrySet(old);
              current = await touch(tx, row.id, wanted.length);
              ticket = await recordChange(
                tx,
                row.id,
                wanted.filter((e) => !oldSet.has(e)),
                old.filter((e) => !wantedSet.has(e)),
              );
            }
            return { response: create(SubscriptionResponseSchema, { subscription: await inline(tx, current) }), ticket };
        }, CHANGE_DEADLINE_MS),
      );
    },

    async listAddresses(req) {
      if (!isId("sub", req.id)) throw notFound("subscription");
      const limit = pageLimit(req.limit);
      if (!(await store.getSubscription(req.keyId, req.id))) throw notFound("subscription");
      const scope = addressesScope(req.keyId, req.id);
      const cursor = decodePageToken(deps.tokenKeys, scope, req.pageToken, isCursor);
      const after = cursor?.s ?? 0;
      const rows = await store.run(
        (db) =>
          db.execute(dsql`
            SELECT chain_id AS "chainId", address, seq FROM subscription_addresses
            WHERE subscription_id = ${req.id} AND seq > ${after}
            ORDER BY seq LIMIT ${limit + 1}`) as unknown as Promise<(Entry & { seq: number | string })[]>,
      );
      const page = pageOf(deps.tokenKeys, scope, rows, limit, (last): AddressCursor => ({ s: Number(last.seq) }));
      return { items: page.items.map((r) => ({ chainId: r.chainId, address: r.address })), nextPageToken: page.nextPageToken };
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
