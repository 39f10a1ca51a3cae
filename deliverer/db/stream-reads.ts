// Stream reads: StreamEvents' pages of a key's events in stream order (xid, seq), and whether any are held back.
// Raw SQL composed per call: each filter is a fragment of the pool's own tagged statement, its values bound.
import type { HoldReason } from "../../common/hold-reasons.ts";
import { withDatabase } from "../../common/db.ts";
import type { EventStatus } from "../schema.ts";
import type { DelivererDb } from "./connection.ts";
import type { StreamFilter, StreamPosition, StreamRow } from "./types.ts";

export class StreamReads {
  constructor(
    private readonly db: DelivererDb,
    /** The pool of the reads planned for their values (openPlannedReads); the main pool without one. */
    private readonly planned: DelivererDb = db,
  ) {}

  /** The filters of a stream as fragments of `client`'s statements (a fragment belongs to the pool that runs it). */
  private streamConditions(filter: StreamFilter, client: DelivererDb["$client"]) {
    return {
      subs: filter.subscriptionIds.length > 0 ? client`AND events.subscription_id IN ${client(filter.subscriptionIds)}` : client``,
      kinds: filter.kinds.length > 0 ? client`AND events.kind IN ${client(filter.kinds)}` : client``,
      chains: filter.chainIds.length > 0 ? client`AND events.chain_id IN ${client(filter.chainIds)}` : client``,
    };
  }

  /**
   * Whether the key has events after `after` that streamPage does not return yet: rows of transactions newer than
   * one still running somewhere in the cluster (one index probe).
   */
  async streamHeldBack(filter: StreamFilter, after: StreamPosition): Promise<boolean> {
    const client = this.db.$client;
    const { subs, kinds, chains } = this.streamConditions(filter, client);
    const rows = (await withDatabase(() => client`
      SELECT 1 FROM events
      WHERE key_id = ${filter.keyId} AND (events.xid, events.seq) > (${after.xid}::xid8, ${after.seq}::bigint) ${subs} ${kinds} ${chains}
      LIMIT 1`)) as unknown[];
    return rows.length > 0;
  }

  /**
   * The key's events after `after`, in stream order (xid, seq), at most `limit`. Only rows whose transaction is older
   * than every transaction still running are read: a row committed later always lands after every position already
   * handed out, so a reader that resumes from its last position misses nothing.
   *
   * The hot read of StreamEvents: raw SQL of only the columns an event view shows (no ORM row mapping, no address
   * arrays), one index range of events_stream_idx (key_id, xid, seq), each row's delivery state probed by its
   * (id, created_at) in a LATERAL subquery (a nested loop by construction: see event-pages.ts pageQuery).
   */
  async streamPage(filter: StreamFilter, after: StreamPosition, limit: number): Promise<StreamRow[]> {
    const client = this.planned.$client;
    const { subs, kinds, chains } = this.streamConditions(filter, client);
    // The page must come off events_stream_idx in order. Before the table has statistics (fresh rows, autovacuum
    // not yet run) the planner guesses a handful of rows and picks a bitmap scan and a sort of every remaining row
    // of the key, on every page: a consumer far behind would read in O(n²). The planned reads' connections have
    // sorting off (openPlannedReads).
    const rows = (await withDatabase(() =>
      client`
          SELECT events.id, events.subscription_id, events.kind, events.chain_id, d.status, d.attempts, d.delivery_count,
            d.response_status, d.response_body, d.held, d.held_reason, events.payload, events.created_at, events.xid::text AS xid, events.seq
          FROM events CROSS JOIN LATERAL (
            SELECT status, attempts, delivery_count, response_status, response_body, held, held_reason FROM event_deliveries
            WHERE event_id = events.id AND created_at = events.created_at LIMIT 1) d
          WHERE events.key_id = ${filter.keyId} AND (events.xid, events.seq) > (${after.xid}::xid8, ${after.seq}::bigint)
            AND events.xid < pg_snapshot_xmin(pg_current_snapshot()) ${subs} ${kinds} ${chains}
          ORDER BY events.xid, events.seq LIMIT ${limit}`,
    )) as {
      id: string;
      subscription_id: string;
      kind: string;
      chain_id: string | null;
      status: EventStatus;
      attempts: number;
      delivery_count: number;
      response_status: number | null;
      response_body: string | null;
      held: boolean;
      held_reason: HoldReason | null;
      payload: string;
      created_at: Date;
      xid: string;
      seq: string | number;
    }[];
    return rows.map((r) => ({
      id: r.id,
      subscriptionId: r.subscription_id,
      kind: r.kind,
      chainId: r.chain_id,
      status: r.status,
      attempts: r.attempts,
      deliveryCount: r.delivery_count,
      responseStatus: r.response_status,
      responseBody: r.response_body,
      held: r.held,
      heldReason: r.held_reason,
      payload: r.payload,
      createdAt: r.created_at,
      xid: r.xid,
      seq: Number(r.seq),
    }));
  }
}
