// The events' daily partitions: the next days made, expired days dropped (deliverer/partitions.ts), hourly and at
// start; a pass that could not finish (a lock not had in time, an error) is tried again a minute later.
import type { Job } from "../../common/jobs.ts";
import type { EventPartitions } from "../partitions.ts";

export function eventPartitionsJob(partitions: EventPartitions): Job {
  return { name: "event partition upkeep", everyMs: 60 * 60_000, retryMs: 60_000, run: () => partitions.maintain() };
}
