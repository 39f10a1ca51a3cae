// Search: GET /v1/events, a key's events by any of its filters, through the address and txId refs when it names one.
import { and, desc, eq } from "drizzle-orm";
import { withDatabase } from "../../common/db.ts";
import { SEARCH_REFS_PER_REQUEST } from "../../common/event-search.ts";
import type { EventViewRow } from "../payload.ts";
import { asLimit, type Statement } from "../prepared.ts";
import { eventAddresses, eventTxRefs } from "../schema.ts";
import { cursorValues, pageBounds, type EventPages, type PageQuery } from "./event-pages.ts";
import type { EventSearch, PageCursor, SearchPage } from "./types.ts";

/**
 * GET /v1/events: a key's events, newest first, every filter an index condition (see the events_key_* indexes, and
 * event_deliveries_key_status_page_idx for the status); a subscription whose events are being purged is already
 * left out. With an address or a txId the page comes in two short statements instead of one join: the key's refs
 * in page order (the address's range of event_addresses, or the txId's of event_tx_refs), then those events by id
 * with created_at bounded to the refs' days. Neither an address nor a txId names a day to prune the events'
 * partitions by: a join would be planned against every partition and every index, which costs more than it runs
 * (docs/adr/0002-events-partitioned-by-day.md).
 */
export function searchEvents(pages: EventPages, q: EventSearch, limit: number, after: PageCursor | undefined): Promise<SearchPage> {
  return withDatabase(async () => {
    if (!q.address && !q.txId) return { rows: await searchQuery(pages, q, limit, after).execute() };
    const out: EventViewRow[] = [];
    let cursor = after;
    let read = 0;
    // Other filters may drop some of the refs' events: read further, in growing steps, until the page is full or
    // the request has read its share of refs.
    for (let chunk = limit + 1; ; chunk = Math.min(chunk * 4, 5_000)) {
      const take = Math.min(chunk, SEARCH_REFS_PER_REQUEST - read);
      // The chunk that ends the request's share reads one ref more, unused: only a ref beyond the share earns a
      // token, so a search whose refs end exactly there answers its last page without one (not a token to an
      // empty page).
      const closing = take === SEARCH_REFS_PER_REQUEST - read;
      const fetched = await refsQuery(pages, q, closing ? take + 1 : take, cursor).execute();
      const beyond = fetched.length > take;
      const refs = beyond ? fetched.slice(0, take) : fetched;
      read += refs.length;
      if (refs.length === 0) break;
      const found = new Map((await eventsOfRefs(pages, q, refs)).map((e) => [e.id, e]));
      for (const r of refs) {
        const e = found.get(r.eventId);
        if (e) out.push(e);
      }
      if (out.length > limit || refs.length < take) break;
      const last = refs[refs.length - 1]!;
      cursor = { t: last.createdAt.getTime(), id: last.eventId };
      if (read >= SEARCH_REFS_PER_REQUEST) return beyond ? { rows: out, resumeAfter: cursor } : { rows: out };
    }
    return { rows: out.slice(0, limit + 1) };
  });
}

/** The statements searchEvents runs, as text and parameters (test/integration/gateway/operations.test.ts checks their plans). */
export function searchSql(pages: EventPages, q: EventSearch, limit: number, after: PageCursor | undefined): { sql: string; params: unknown[] }[] {
  if (!q.address && !q.txId) return [searchQuery(pages, q, limit, after).toSQL()];
  const t = after ? new Date(after.t) : new Date();
  return [
    refsQuery(pages, q, limit + 1, after).toSQL(),
    eventsOfRefsQuery(pages, q, [{ eventId: after?.id ?? "evt_", createdAt: t }]).toSQL(),
  ];
}

/**
 * A page of the key's refs for the search's address (event_addresses) or, without one, its txId (event_tx_refs):
 * (event id, created_at) in page order, one range of the table's page index (neither table is partitioned).
 */
function refsQuery(pages: EventPages, q: EventSearch, limit: number, after: PageCursor | undefined): Statement<{ eventId: string; createdAt: Date }> {
  const byAddress = Boolean(q.address);
  const values = { keyId: q.keyId, value: byAddress ? q.address : q.txId, since: q.since, until: q.until, ...cursorValues(after), limit };
  const shape = `refs:${byAddress ? "address" : "txId"}:${q.since ? "s" : ""}${q.until ? "u" : ""}${after ? "a" : ""}`;
  const refs = byAddress ? eventAddresses : eventTxRefs;
  const value = byAddress ? eventAddresses.address : eventTxRefs.txId;
  const fields = { eventId: refs.eventId, createdAt: refs.createdAt };
  return pages.shapes.statement(shape, values, { client: pages.db.$client, fields }, (p) => {
    const conds = [eq(refs.keyId, p("keyId")), eq(value, p("value")), ...pageBounds(refs.createdAt, refs.eventId, q, after, p)];
    return pages.db
      .select(fields)
      .from(refs)
      .where(and(...conds))
      .orderBy(desc(refs.createdAt), desc(refs.eventId))
      .limit(asLimit(p("limit")));
  });
}

function eventsOfRefsQuery(pages: EventPages, q: EventSearch, refs: { eventId: string; createdAt: Date }[]): PageQuery {
  const times = refs.map((r) => r.createdAt.getTime());
  const window = { from: new Date(Math.min(...times)), to: new Date(Math.max(...times)) };
  // No key condition: the refs are the key's already (both ref tables are keyed by it), and with one the planner
  // could read the key's events between the refs' times through its page index instead of probing the page's ids
  // (at 1,000,000 rows, where the key's newest day is dense, 10,000 rows read for a busy address's 51).
  const { subscriptionId, status, txId, chainId, kind } = q;
  return pages.eventsById(refs.map((r) => r.eventId), { subscriptionId, status, txId, chainId, kind, skipPurged: true }, window);
}

function eventsOfRefs(pages: EventPages, q: EventSearch, refs: { eventId: string; createdAt: Date }[]): Promise<EventViewRow[]> {
  return eventsOfRefsQuery(pages, q, refs).execute();
}

function searchQuery(pages: EventPages, q: EventSearch, limit: number, after: PageCursor | undefined): PageQuery {
  return pages.pageQuery({ ...q, skipPurged: true }, limit, after);
}
