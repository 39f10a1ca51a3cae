// The events of a run of blocks handed to the deliverer in few Enqueue calls instead of one per block: each call
// costs the deliverer a target lookup, a schedule reservation, one INSERT and a schedule update (Redis and PostgreSQL
// round trips and a commit) whatever its size, and a catch-up over 1,000 blocks made 1,000 of them (measured in
// matcher/README.md "Catch-up: where the time goes"). Events are sent as soon as MAX_EVENTS_PER_CALL
// of them are ready, while the other blocks of the run are still matched; the caller moves its checkpoint only after
// around() resolved, i.e. after every call was accepted. A failed call fails around(): the caller retries the whole run,
// and the deliverer's one event per (subscription, kind, transfer) makes the calls that did succeed harmless to repeat.
import type { NewEvent } from "../gen/webhooks/delivery/v1/delivery_pb.ts";

/** Events per Enqueue call: the deliverer writes up to 2,000 rows per statement (deliverer/service.ts INSERT_CHUNK). */
export const MAX_EVENTS_PER_CALL = 2_000;

export class EnqueueBatch {
  private buffer: NewEvent[] = [];
  private readonly calls: Promise<void>[] = [];

  constructor(
    private readonly enqueue: (events: NewEvent[]) => Promise<void>,
    /** Told how long each call took (the stream's `enqueue` stage). */
    private readonly timed: (since: number) => void = () => {},
    private readonly maxEvents: number = MAX_EVENTS_PER_CALL,
  ) {}

  /**
   * Runs `match` (which add()s each block's events) and resolves once every call was accepted; when `match` fails,
   * waits for the calls already sent and rethrows (the caller retries the run).
   */
  async around(match: () => Promise<void>): Promise<void> {
    try {
      await match();
    } catch (err) {
      await this.settle();
      throw err;
    }
    await this.done();
  }

  /** Adds a block's events; sends a call once enough are buffered. */
  add(events: readonly NewEvent[]): void {
    for (const e of events) this.buffer.push(e);
    while (this.buffer.length >= this.maxEvents) this.send(this.buffer.splice(0, this.maxEvents));
  }

  /** Sends what is left and resolves once every call was accepted; rejects with the first failure. */
  private async done(): Promise<void> {
    if (this.buffer.length > 0) this.send(this.buffer.splice(0));
    await Promise.all(this.calls);
  }

  /** Waits for the calls already sent without sending the rest (after the run failed elsewhere). */
  private async settle(): Promise<void> {
    this.buffer = [];
    await Promise.allSettled(this.calls);
  }

  private send(events: NewEvent[]): void {
    const started = performance.now();
    const call = this.enqueue(events).finally(() => this.timed(started));
    // Observed by done() or settle(); never an unhandled rejection meanwhile.
    call.catch(() => {});
    this.calls.push(call);
  }
}
